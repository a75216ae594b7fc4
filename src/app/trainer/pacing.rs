//! The pace of training: at a few steps a second a person can watch the model change; at max
//! the loop trains as fast as the device goes. A pause or a slow step leaves no backlog of
//! steps to catch up on, so the pace never bursts.

use super::{now_ms, Trainer, IDLE_MS};
use crate::app::protocol::Pace;

/// The most steps owed to the pace that are still taken: after a longer stall (a pause, an
/// evaluation, a slow device) the pace starts again from now.
const CATCH_UP_MS: f64 = 250.0;

impl Trainer {
    /// Takes the page's pace; a new pace counts from now.
    pub(super) fn set_pace(&mut self, pace: Pace) {
        self.pace = pace;
        self.pace_from_now();
    }

    /// The pace counts from now: no steps owed from before (a pause, a new pace).
    pub(super) fn pace_from_now(&mut self) {
        self.next_step_ms = now_ms();
    }

    /// Whether the run is held to a pace (not max).
    pub(super) fn paced(&self) -> bool {
        self.pace.steps_per_s.is_some()
    }

    /// Milliseconds between two steps at the pace.
    fn interval_ms(&self) -> Option<f64> {
        self.pace.steps_per_s.map(|r| 1000.0 / r.max(1e-3) as f64)
    }

    /// Steps the pace allows now (u64::MAX at max speed).
    pub(super) fn steps_allowed(&mut self) -> u64 {
        let Some(interval) = self.interval_ms() else {
            return u64::MAX;
        };
        let now = now_ms();
        self.next_step_ms = self.next_step_ms.max(now - CATCH_UP_MS);
        if now < self.next_step_ms {
            return 0;
        }
        ((now - self.next_step_ms) / interval) as u64 + 1
    }

    /// Counts `steps` taken against the pace.
    pub(super) fn took_steps(&mut self, steps: u64) {
        if let Some(interval) = self.interval_ms() {
            self.next_step_ms += steps as f64 * interval;
        }
    }

    /// Starts (on) or stops the run's clock.
    pub(super) fn clock(&mut self, on: bool) {
        self.clock_from = on.then(now_ms);
    }

    /// The wall time since the clock last counted, while it runs.
    pub(super) fn clock_tick(&mut self) -> Option<f64> {
        let now = now_ms();
        let from = self.clock_from.replace(now)?;
        Some(now - from)
    }

    /// How long the loop may sleep: until the next paced step while training, else IDLE_MS.
    pub(super) fn idle_ms(&self) -> i32 {
        match (self.running, self.paced()) {
            (true, true) => ((self.next_step_ms - now_ms()).ceil() as i32).clamp(1, IDLE_MS),
            _ => IDLE_MS,
        }
    }
}
