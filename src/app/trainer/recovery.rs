//! Surviving a lost GPU device (a driver reset, a browser reclaiming the GPU of a background
//! tab): the loop keeps a checkpoint on the CPU side as it evaluates, and when the device is
//! lost it says so, makes a new device and resumes the run from that checkpoint.

use super::{now_ms, scope, Trainer};
use crate::app::protocol::Report;
use crate::app::schema;
use crate::train::BestKeeper;
use crate::Device;

/// Least milliseconds between two kept checkpoints: keeping reads every weight and optimizer
/// moment back, so it is rationed by time, not done at every evaluation (a fast GPU evaluates
/// several times a second). A loss costs at most this much training.
const KEEP_EVERY_MS: f64 = 5000.0;
/// Devices lost in one run before the page gives up and asks for a reload: a GPU that keeps
/// failing should not be retried forever.
const MOST_RECOVERIES: u32 = 3;

/// A checkpoint held on the CPU side, to resume from when the device is lost.
pub(super) struct Kept {
    bytes: Vec<u8>,
    step: u64,
    at_ms: f64,
}

impl Trainer {
    /// After an evaluation: keeps the session's checkpoint when the last one kept is old. Only
    /// a GPU can be lost; the CPU backend keeps nothing.
    pub(super) async fn keep_weights(&mut self) -> Result<(), String> {
        // GPT-2's checkpoint is its whole frozen base, hundreds of MB read back every few
        // seconds: a lost device starts its run again instead.
        let Some(session) = self
            .session
            .as_ref()
            .filter(|s| s.device().is_gpu() && !s.is_gpt2())
        else {
            return Ok(());
        };
        if self
            .kept
            .as_ref()
            .is_some_and(|k| now_ms() - k.at_ms < KEEP_EVERY_MS)
        {
            return Ok(());
        }
        let bytes = session.save().await.map_err(|e| e.sentence())?;
        self.keep(bytes, session.step);
        Ok(())
    }

    /// Holds `bytes`, a checkpoint of step `step`, as the one to resume from.
    pub(super) fn keep(&mut self, bytes: Vec<u8>, step: u64) {
        self.kept = Some(Kept {
            bytes,
            step,
            at_ms: now_ms(),
        });
        self.report(Report::Kept(step));
    }

    /// Why the GPU device was lost, once it is.
    pub(super) fn device_lost(&self) -> Option<String> {
        match &self.device {
            Device::Gpu(g) => g.lost(),
            Device::Cpu => None,
        }
    }

    /// Destroys the device, as a driver reset would: `window.webgrad.loseDevice()`, for tests.
    pub(super) fn lose_device(&self) {
        if let Device::Gpu(g) = &self.device {
            g.destroy();
        }
    }

    /// Makes a new device (the CPU backend when no GPU is offered any more) and resumes the
    /// run on it from the kept checkpoint, or starts it afresh when none was kept yet.
    pub(super) async fn recover(&mut self, why: String) -> Result<(), String> {
        // A run on the CPU backend goes on as it was, and a GPU that keeps failing does not
        // count against it; the new GPU is for the next Reset.
        let on_cpu = self.session.as_ref().is_some_and(|s| !s.device().is_gpu());
        if !on_cpu {
            self.recoveries += 1;
            if self.recoveries > MOST_RECOVERIES {
                self.session = None;
                return Err(format!("The GPU device was lost again ({why}), the {MOST_RECOVERIES}th time in this run. Reload the page to train again."));
            }
        }
        let (device, adapter) = scope::open_device().await;
        self.report(Report::Device(adapter));
        // The new device opens in f32: the run's precision again (f32 where it has no matrix
        // units for f16), before the run is resumed on it.
        if let (Device::Gpu(gpu), Some(plan)) = (&device, &self.plan) {
            let _ = gpu.set_precision(schema::precision(&plan.form));
        }
        self.device = device;
        if on_cpu {
            self.report(Report::Note(Some(format!(
                "The GPU device was lost ({why}); this run trains on the CPU backend and goes on."
            ))));
            return Ok(());
        }
        self.rate = None;
        let taken_over = match self.device {
            Device::Gpu(_) => "A new one took over",
            Device::Cpu => "No GPU is offered any more, so the CPU backend took over",
        };
        let resumed = match (self.session.take(), &self.kept) {
            (Some(session), Some(kept)) => session
                .resume_on(&self.device, &kept.bytes)
                .map(|s| (s, kept.step))
                .map_err(|e| e.sentence()),
            _ => Err("No weights had been kept yet.".to_string()),
        };
        let (session, step) = match resumed {
            Ok(resumed) => resumed,
            Err(e) => {
                self.report(Report::Note(Some(format!("The GPU device was lost ({why}). {taken_over}; the run starts again, since its weights could not be restored: {e}"))));
                self.report(Report::Restart);
                return Ok(());
            }
        };
        self.session = Some(session);
        self.forget_after(step);
        self.report(Report::ClearError);
        self.report(Report::Note(Some(format!("The GPU device was lost ({why}). {taken_over}, from step {step}, the last weights kept; the steps after it are trained again."))));
        self.evaluate(None, true).await
    }

    /// Drops the figures of steps after `step`, where the run now stands: the curve, the last
    /// training loss and the best validation loss are those of the run as it now is.
    pub(super) fn forget_after(&mut self, step: u64) {
        // A resumed run evaluates `step` next; its best is kept from the evaluations before.
        self.evals.retain(|&(s, _)| s < step);
        let mut best = BestKeeper::new(None);
        for &(s, val) in &self.evals {
            best.observe(val, s);
        }
        self.best = best;
        self.report(Report::Rewound(step));
    }
}
