//! The training side of the playground, run in a dedicated Web Worker: it owns the GPU device,
//! the session and the loop, does what the page's requests ask and reports back. Training
//! never waits on the page's frames, so a slow step cannot freeze the page, and a background
//! tab (whose frames stop) keeps training.

mod built;
mod files;
mod finetune;
mod gpt2;
mod inbox;
mod inspect;
mod loader;
mod pacing;
mod recovery;
mod runaway;
mod runs;
mod sampling;
mod scope;
mod sizing;

use super::protocol::{Choices, Evaluated, Memory, Pace, Plan, Progress, Report, Request};
use super::schema;
use crate::data::Text;
use crate::train::{BestKeeper, Sampler, Session};
use crate::Device;
use built::built;
use scope::now_ms;
use wasm_bindgen::JsCast;

/// Milliseconds of recording in one chunk of steps, and the most steps in one: between chunks
/// the worker reads the loss back and takes the page's requests.
const CHUNK_BUDGET_MS: f64 = 20.0;
const MAX_STEPS_PER_CHUNK: u64 = 50;
/// Seconds of training one chunk takes on, at the measured rate: steps are recorded far faster
/// than a slow GPU runs them, so without this a chunk could queue seconds of work, and Pause,
/// Sample and the views would wait that long.
const CHUNK_WORK_S: f32 = 0.25;
/// Characters a text evaluation predicts in the page: a sixteenth of the CLI's, so that the
/// frequent evaluations stay quick (their noise, about 0.02 nats, is fine for a curve).
pub(super) const PAGE_EVAL_CHARS: usize = 1 << 13;
/// Weight of the previous steps-per-second figure in the reported rate (an exponential
/// average, so one slow chunk does not make the number jump).
const RATE_SMOOTHING: f32 = 0.8;
/// Least milliseconds between two readings of the views (insides, histograms, gradient flow):
/// a fast GPU evaluates many times a second, and each reading costs a few round trips to the
/// GPU that the steps would otherwise have (spiral in Chrome on an H100: 537 steps/s reading
/// them at every evaluation). The validation loss is still taken at every evaluation.
const INSPECT_EVERY_MS: f64 = 250.0;
/// Milliseconds the worker sleeps while there is nothing to do, at most: it wakes at once for
/// a request, and at least this often to notice a device lost while paused.
pub(super) const IDLE_MS: i32 = 250;

/// The worker's entry point, called by web/worker.js once the module is loaded.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn worker_main() {
    console_error_panic_hook::set_once();
    inbox::listen();
    wasm_bindgen_futures::spawn_local(async {
        let (device, adapter) = scope::open_device().await;
        inbox::post(0, Report::Device(adapter));
        Trainer::new(device).run().await;
    });
}

/// The training loop: owns the device, the session and the data.
struct Trainer {
    device: Device,
    session: Option<Session>,
    digits: Option<crate::data::Labelled>,
    shakespeare: Option<Text>,
    /// The run of the session (the page's count of Resets when it asked for it), and how it
    /// was asked for.
    run: u64,
    plan: Option<Plan>,
    running: bool,
    /// Steps per second, smoothed.
    rate: Option<f32>,
    /// Milliseconds spent training in this run.
    trained_ms: f64,
    /// The lowest validation loss of this run and its step; every evaluation's loss.
    best: BestKeeper,
    evals: Vec<(u64, f32)>,
    /// Whether the page was told beside the learning rate that the loss ran away.
    runaway_said: bool,
    /// A recent checkpoint on the CPU side, to resume from if the GPU device is lost.
    kept: Option<recovery::Kept>,
    /// Devices lost in this run.
    recoveries: u32,
    /// A sampling under way, taken on a few characters at a time.
    sampler: Option<Sampler>,
    /// When the views were last read, and at which step.
    inspected_ms: f64,
    inspected_step: Option<u64>,
    choices: Choices,
    /// The pad's drawing, while the views show it.
    pad: Option<Vec<f32>>,
    /// What the session's LoRA adapters adapt, while it has them.
    lora_base: Option<finetune::Base>,
    /// How fast to train, and when the next step is due at that pace.
    pace: Pace,
    next_step_ms: f64,
    /// When training last wrote a sample on its own, and at which step.
    auto_sampled: (f64, u64),
    /// Whether the sampling under way is one training wrote on its own.
    auto_sampling: bool,
    /// When the loop last took a chunk of steps.
    trained_ms_at: f64,
    /// While training is on, when the run's clock last counted (it counts the wall time, the
    /// pace's waits included).
    clock_from: Option<f64>,
}

/// Whether the flow chart gets a point at every evaluation: on the CPU backend, where reading
/// the flow costs nothing. On a GPU each reading is a round trip (in Chrome, a good part of a
/// millisecond), so the flow is read with the views, at most every INSPECT_EVERY_MS.
fn flow_at_each_evaluation(session: &Session) -> bool {
    matches!(session.device(), Device::Cpu)
}

impl Trainer {
    fn new(device: Device) -> Trainer {
        Trainer {
            device,
            session: None,
            digits: None,
            shakespeare: None,
            run: 0,
            plan: None,
            running: false,
            rate: None,
            trained_ms: 0.0,
            best: BestKeeper::new(None),
            evals: Vec::new(),
            runaway_said: false,
            kept: None,
            recoveries: 0,
            sampler: None,
            inspected_ms: f64::NEG_INFINITY,
            inspected_step: None,
            choices: Choices::default(),
            pad: None,
            lora_base: None,
            pace: Pace::default(),
            next_step_ms: 0.0,
            auto_sampled: (f64::NEG_INFINITY, u64::MAX),
            trained_ms_at: f64::NEG_INFINITY,
            clock_from: None,
            auto_sampling: false,
        }
    }

    async fn run(mut self) {
        loop {
            let busy = (self.running && self.steps_allowed() > 0) || self.sampler.is_some();
            if busy {
                // Lets the page's requests in even when no GPU readback yields (the CPU).
                scope::yield_to_events().await;
            } else {
                inbox::wait(self.idle_ms()).await;
            }
            if self.device_lost().is_some() {
                // Lost while nothing was asked of it (a paused run).
                self.settle(Ok(())).await;
            }
            for r in inbox::take() {
                let result = self.request(r).await;
                self.settle(result).await;
            }
            if self.sampler.is_some() {
                let result = self.sample_some().await;
                self.settle(result).await;
            }
            let allowed = self.steps_allowed();
            if self.running && allowed > 0 && !self.sample_first() {
                let before = self.session.as_ref().map_or(0, |s| s.step);
                let steps = self.steps_per_chunk().min(allowed);
                let result = self.train_for(CHUNK_BUDGET_MS, steps, false).await;
                let after = self.session.as_ref().map_or(0, |s| s.step);
                self.took_steps(after.saturating_sub(before));
                self.trained_ms_at = now_ms();
                self.settle(result).await;
                self.sample_on_its_own();
            }
        }
    }

    fn report(&self, report: Report) {
        inbox::post(self.run, report);
    }

    async fn request(&mut self, r: Request) -> Result<(), String> {
        match r {
            Request::Reset(plan) => self.reset(plan).await,
            Request::Run { on, ask } => {
                inbox::took_ask(ask);
                self.running = on;
                self.clock(on);
                if on {
                    self.pace_from_now();
                    return Ok(());
                }
                // Paused, the figures and the views are of the model as it stopped, all of
                // one step: a classifier's accuracy in the stats line and in its views would
                // otherwise disagree (a text model's evaluation is slower, and its views show
                // no figure of their own).
                let step = self.session.as_ref().map(|s| s.step);
                let moved = step != self.inspected_step;
                let evaluated = self.evals.last().map(|e| e.0);
                let classifies = self
                    .session
                    .as_ref()
                    .is_some_and(|s| s.labelled().is_some());
                match !self.stale() {
                    true if classifies && evaluated != step => self.evaluate(None, true).await,
                    true if moved => self.inspect().await,
                    _ => Ok(()),
                }
            }
            Request::Step => self.train_for(0.0, 1, true).await,
            Request::Save(what) => self.save(what).await,
            Request::FineTune(ask) => self.fine_tune(ask).await,
            Request::Load(bytes) => self.load(&bytes.0).await,
            Request::Sample(settings) => {
                self.start_sampling(settings);
                Ok(())
            }
            Request::Pad(digit) => {
                // A drawing is read alone; once cleared, the views show a test digit again.
                let cleared = digit.is_none();
                self.choices.drawn = !cleared;
                self.pad = digit;
                if cleared {
                    self.draw_views().await
                } else {
                    self.classify_pad().await
                }
            }
            Request::Choose(choices) => {
                self.choices = choices;
                self.redraw_views().await
            }
            Request::Pace(pace) => {
                self.set_pace(pace);
                Ok(())
            }
            Request::LoseDevice => {
                self.lose_device();
                Ok(())
            }
            Request::Unreadable(why) => Err(why),
        }
    }

    /// After a piece of work: a lost device is replaced and the run resumed (training goes on
    /// if it was on); any other error pauses training and is reported.
    async fn settle(&mut self, result: Result<(), String>) {
        let on_gpu = self
            .session
            .as_ref()
            .map_or(&self.device, |s| s.device())
            .is_gpu();
        if result.is_err() && on_gpu && self.device_lost().is_none() {
            // A failed readback can come before the device's loss is announced.
            scope::sleep(20).await;
        }
        let result = match self.device_lost() {
            Some(why) => self.recover(why).await,
            None => result,
        };
        if let Err(e) = result {
            self.sampler = None;
            self.running = false;
            self.report(Report::Failed(e));
        }
    }

    /// A step's or an evaluation's result. When the run diverged, its session went back to
    /// its last good weights and their step: the figures after that step go too.
    fn unless_diverged<T>(&mut self, result: crate::Result<T>) -> Result<T, String> {
        if let Err(crate::Error::Diverged { .. }) = &result {
            if let Some(step) = self.session.as_ref().map(|s| s.step) {
                self.forget_after(step);
            }
        }
        result.map_err(|e| e.sentence())
    }

    /// What the worker holds: the most the GPU pool's buffers came to since the last report
    /// (an evaluation's included), and its WebAssembly memory now.
    fn memory(&self) -> Memory {
        let gpu_bytes = match self.session.as_ref().map(|s| s.device()) {
            Some(Device::Gpu(g)) => Some(g.take_peak_bytes()),
            _ => None,
        };
        let heap_bytes = wasm_bindgen::memory()
            .dyn_into::<js_sys::WebAssembly::Memory>()
            .map_or(0, |m| {
                m.buffer()
                    .unchecked_into::<js_sys::ArrayBuffer>()
                    .byte_length()
            });
        Memory {
            gpu_bytes,
            heap_bytes: heap_bytes as u64,
        }
    }

    /// True when a Reset was asked for after the one that made this session (a task switched
    /// while a step or an evaluation was under way): the session's figures must not be
    /// reported, and training waits for that Reset.
    fn stale(&self) -> bool {
        inbox::latest_run() != self.run
    }

    /// Steps for the next chunk: about CHUNK_WORK_S of work at the measured rate (one step
    /// until there is a rate).
    fn steps_per_chunk(&self) -> u64 {
        // While a sample is written, each of its characters waits for the GPU work queued
        // before it: one step at a time keeps that short.
        if self.sampler.is_some() {
            return 1;
        }
        let steps = self.rate.map_or(1.0, |r| (r * CHUNK_WORK_S).ceil());
        (steps as u64).clamp(1, MAX_STEPS_PER_CHUNK)
    }

    /// Trains until `budget_ms` have passed or `max_steps` were taken, then reads the loss
    /// back once, and evaluates when an evaluation is due, or at the end when `then_evaluate`
    /// (the Step button).
    async fn train_for(
        &mut self,
        budget_ms: f64,
        max_steps: u64,
        then_evaluate: bool,
    ) -> Result<(), String> {
        if self.stale() {
            return Ok(());
        }
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        let start = now_ms();
        let inspect_due = start - self.inspected_ms >= INSPECT_EVERY_MS;
        let first = session.step;
        let (every, end) = (session.config.eval_every, session.config.steps);
        loop {
            // The step before an evaluation keeps its gradient norms for the flow chart
            // (`flow_at_each_evaluation`), and so does the run's last, so that the chart
            // reaches it however fast the run.
            let final_step = session.step + 1 == end;
            let last = (session.step + 1) % every == 0 || final_step;
            let flow_due = inspect_due || flow_at_each_evaluation(session);
            if then_evaluate || final_step || (last && flow_due) {
                session.watch_next_step();
            }
            session.train_step().map_err(|e| e.sentence())?;
            if session.step - first >= max_steps
                || now_ms() - start >= budget_ms
                || session.step % every == 0
                || session.step == end
            {
                break;
            }
        }
        let finished = first < end && session.step == end;
        let checked = session.check().await;
        let train = self.unless_diverged(checked)?;
        // After a model's first steps, its product shapes are timed (src/tune/products.rs).
        scope::time_products(&self.device).await;
        if self.stale() {
            return Ok(());
        }
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        let (step, taken) = (session.step, session.step - first);
        let due = step % every == 0 || then_evaluate || finished;
        if due {
            let inspect = then_evaluate || finished || inspect_due;
            self.evaluate(Some(train), inspect).await?;
            if finished && !self.stale() {
                self.finish();
            }
        }
        // Watched at a few steps a second, the views follow every few steps, not only at
        // evaluations (read after the step's figures are reported, so they are of that step).
        let inspect_now = !due && inspect_due && self.paced();
        // Time and rate count the evaluations too: they are the run's wall time.
        let took = now_ms() - start;
        self.trained_ms += self.clock_tick().unwrap_or(took);
        let rate = taken as f32 / (took as f32 / 1000.0).max(1e-3);
        let keep = RATE_SMOOTHING;
        self.rate = Some(self.rate.map_or(rate, |r| keep * r + (1.0 - keep) * rate));
        // At a pace, the steps a second are the pace's (the device could go faster).
        let shown_rate = match self.pace.steps_per_s {
            Some(pace) => self.rate.map(|r| r.min(pace)),
            None => self.rate,
        };
        self.report(Report::Progress(Progress {
            step,
            train_loss: Some(train),
            steps_per_s: shown_rate,
            trained_ms: self.trained_ms,
            evaluated: due,
            memory: self.memory(),
        }));
        if inspect_now {
            self.inspect().await?;
        }
        Ok(())
    }

    /// At the run's step count, where its schedule ends: says how it went, and pauses there
    /// only when the page asked to stop at the end.
    fn finish(&mut self) {
        let steps = self.session.as_ref().map_or(0, |s| s.step);
        let best = self
            .best
            .best()
            .map(|(loss, step)| format!("The best validation loss was {loss:.3}, at step {step}."))
            .unwrap_or_default();
        if self.pace.stop_at_end {
            self.running = false;
            let note = format!("Done: {steps} steps, the schedule's end. {best} Train goes on at its last learning rate.");
            self.report(Report::Finished(Some(note)));
        } else {
            let note = format!("Step {steps}, the schedule's end. {best} Training goes on at its last learning rate.");
            self.report(Report::ScheduleEnd(note));
        }
    }

    /// Validation figures and a point on the charts; with `inspect`, the gradient flow and
    /// fresh views too (the flow at every evaluation on the CPU backend).
    async fn evaluate(&mut self, train: Option<f32>, inspect: bool) -> Result<(), String> {
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        let evaluated = session.evaluate().await;
        let eval = self.unless_diverged(evaluated)?;
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        let base_loss = match self.lora_base.as_ref().and_then(|b| b.text.as_ref()) {
            Some(text) => Some(session.loss_on(text).await.map_err(|e| e.sentence())?),
            None => None,
        };
        let flow = match inspect || flow_at_each_evaluation(session) {
            true => session.flow().await.map_err(|e| e.sentence())?,
            false => None,
        };
        let step = session.step;
        if self.stale() {
            return Ok(());
        }
        self.say_if_runaway(eval.loss);
        self.best.observe(eval.loss, step);
        self.evals.push((step, eval.loss));
        self.report(Report::Evaluated(Evaluated {
            step,
            train_loss: train,
            val_loss: eval.loss,
            val_acc: eval.accuracy,
            base_loss,
            flow,
        }));
        if inspect {
            self.inspect().await?;
        }
        self.keep_weights().await
    }

    /// Reads the views and the weight histograms of the model as it is now.
    async fn inspect(&mut self) -> Result<(), String> {
        self.inspected_ms = now_ms();
        self.inspected_step = self.session.as_ref().map(|s| s.step);
        self.draw_views().await?;
        if let Some(session) = &self.session {
            let hists = session
                .weight_histograms()
                .await
                .map_err(|e| e.sentence())?;
            self.report(Report::Histograms(hists));
        }
        Ok(())
    }
}
