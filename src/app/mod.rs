//! The playground page (wasm32 only): wires the controls, runs the training loop a few steps
//! per animation frame, and draws charts and views. All training goes through
//! `train::Session`, the same as the CLI's.

mod adapter;
mod api;
mod bench;
mod charts;
mod cnn_views;
mod dom;
mod flow_chart;
mod histogram_view;
mod inspect;
mod loader;
mod network;
mod outputs;
mod pad;
mod recovery;
mod runs;
mod sampling;
mod settings;
mod shared;
mod sizing;
mod summary;
mod text_views;
mod views;

use crate::data::Text;
use crate::train::{BestKeeper, Config, ModelConfig, Sampler, Session, Task, TaskData};
use crate::{Device, Gpu};
use charts::Point;
use shared::{
    clear_error_if, send, show_error, show_note, with, Command, Status, SETTINGS_INVALID,
};
use wasm_bindgen::prelude::*;

/// Milliseconds of training per animation frame, and the most steps in one: the page stays
/// responsive (a 60 Hz frame is 16.7 ms, so a frame of training leaves the next one late, not
/// lost) while a fast GPU still gets steps enough to stay busy.
const FRAME_BUDGET_MS: f64 = 20.0;
const MAX_STEPS_PER_FRAME: u64 = 50;
/// Seconds of training one frame takes on, at the measured rate: steps are recorded far
/// faster than a slow GPU runs them, so without this a frame could queue seconds of work, and
/// Pause, Sample and the views would wait that long.
const FRAME_WORK_S: f32 = 0.25;
/// Steps between evaluations in the page: digits runs are the shortest (600 steps by default),
/// so they evaluate a little more often to keep enough points on the validation curve.
const DIGITS_EVAL_EVERY: u64 = 20;
const EVAL_EVERY: u64 = 25;
/// Characters a text evaluation predicts in the page: a sixteenth of the CLI's, so that the
/// frequent evaluations stay quick (their noise, about 0.02 nats, is fine for a curve).
const PAGE_EVAL_CHARS: usize = 1 << 13;
/// Least milliseconds between two writes of the run to the browser's storage (each writes
/// every kept run).
const RUN_KEEP_EVERY_MS: f64 = 1000.0;
/// Weight of the previous steps-per-second figure in the shown rate (an exponential average,
/// so one slow frame does not make the number jump).
const RATE_SMOOTHING: f32 = 0.8;

/// Runs when the module loads; does nothing on pages without the playground (e.g. tests).
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    if dom::by_id::<web_sys::HtmlElement>("task").is_none() {
        return;
    }
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    if let Some(options) = bench::options(&search) {
        api::install();
        wasm_bindgen_futures::spawn_local(async move {
            if options.profile {
                crate::gpu::request_profile();
            }
            let gpu = Gpu::new().await.map_err(|e| e.to_string());
            bench::run(gpu, options).await;
        });
        return;
    }
    wasm_bindgen_futures::spawn_local(async move {
        let (device, adapter) = open_device().await;
        dom::set_text("adapter", &adapter);
        with(|s| s.status.adapter = adapter);
        let task = settings::query_task(&search).unwrap_or_default();
        select_task(task);
        settings::apply_query(&search);
        api::install();
        api::wire_controls();
        fold_settings_on_a_phone();
        send(Command::Reset);
        Loop::new(device).run().await;
    });
}

/// On a narrow screen the settings start folded, so that the views come first.
fn fold_settings_on_a_phone() {
    let narrow = web_sys::window()
        .and_then(|w| w.inner_width().ok())
        .and_then(|w| w.as_f64())
        .is_some_and(|w| w < PHONE_WIDTH);
    if let Some(details) = dom::by_id::<web_sys::HtmlDetailsElement>("settings") {
        details.set_open(!narrow);
    }
}

/// The widest screen, in CSS pixels, laid out for a phone (as in web/style.css).
const PHONE_WIDTH: f64 = 900.0;

/// The GPU when the browser offers one, else the CPU backend; with a sentence saying which.
async fn open_device() -> (Device, String) {
    match Gpu::new().await {
        Ok(gpu) => {
            let name = match adapter::describe().await {
                Some(described) => described,
                None => gpu.adapter_name(),
            };
            (Device::Gpu(gpu), format!("GPU adapter: {name}"))
        }
        Err(_) => (
            Device::Cpu,
            "This browser offers no WebGPU adapter, so training runs on the CPU (slower)."
                .to_string(),
        ),
    }
}

/// Shows a task's controls and defaults.
pub(crate) fn select_task(task: Task) {
    let vocab = 1;
    if let Ok(config) = Config::defaults(task, None, None, vocab) {
        settings::show_defaults(&config);
    }
    let points = task.point_set().is_some();
    let (digits, text) = (task == Task::Digits, task == Task::Text);
    dom::set_hidden("mlp-settings", !points);
    dom::set_hidden("points-view", !points);
    dom::set_hidden("cnn-settings", !digits);
    dom::set_hidden("digits-view", !digits);
    dom::set_hidden("gpt-settings", !text);
    dom::set_hidden("text-view", !text);
    dom::set_hidden("acc-chart", text);
    dom::set_hidden("acc-caption", text);
    if text {
        dom::set_value("gpt-size", "auto");
    }
    with(|s| s.status.task = task);
}

/// A promise resolved at the next animation frame: the loop yields to the browser there.
async fn next_frame() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.request_animation_frame(&resolve);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// The training loop: owns the session and the data, and does what the UI asks.
struct Loop {
    device: Device,
    session: Option<Session>,
    digits: Option<crate::data::Labelled>,
    shakespeare: Option<Text>,
    /// Steps per second, smoothed.
    rate: Option<f32>,
    /// Milliseconds spent training in this run.
    trained_ms: f64,
    /// The lowest validation loss of this run and its step.
    best: BestKeeper,
    /// A recent checkpoint on the CPU side, to resume from if the GPU device is lost.
    kept: Option<recovery::Kept>,
    /// Devices lost in this run.
    recoveries: u32,
    /// The Resets asked for when this session's Reset began (see `stale`).
    resets_done: u64,
    /// A sampling under way, taken on a few characters a frame.
    sampler: Option<Sampler>,
    /// When the run was last written to the browser's storage.
    run_kept_ms: f64,
}

impl Loop {
    fn new(device: Device) -> Loop {
        Loop {
            device,
            session: None,
            digits: None,
            shakespeare: None,
            rate: None,
            trained_ms: 0.0,
            best: BestKeeper::new(None),
            kept: None,
            recoveries: 0,
            resets_done: 0,
            sampler: None,
            run_kept_ms: 0.0,
        }
    }

    async fn run(mut self) {
        loop {
            next_frame().await;
            if self.device_lost().is_some() {
                // Lost while nothing was asked of it (a paused run).
                self.settle(Ok(())).await;
            }
            let commands = with(|s| std::mem::take(&mut s.commands));
            for c in commands {
                let result = self.command(c).await;
                self.settle(result).await;
            }
            if self.sampler.is_some() {
                let result = self.sample_some().await;
                self.settle(result).await;
            }
            if with(|s| s.status.running) {
                let result = self
                    .train_for(FRAME_BUDGET_MS, self.steps_per_frame(), false)
                    .await;
                self.settle(result).await;
            }
        }
    }

    async fn command(&mut self, c: Command) -> Result<(), String> {
        match c {
            Command::Reset => self.reset().await,
            Command::Step => self.train_for(0.0, 1, true).await,
            Command::Save => self.save().await,
            Command::Load(bytes) => self.load(&bytes).await,
            Command::Sample => self.start_sampling(),
            Command::Pad => self.classify_pad().await,
            Command::Redraw => {
                self.show_stats();
                Ok(())
            }
            Command::Views => self.redraw_views().await,
            Command::LoseDevice => {
                self.lose_device();
                Ok(())
            }
        }
    }

    /// After a piece of work: a lost device is replaced and the run resumed (training goes on
    /// if it was on); any other error pauses training and is shown.
    async fn settle(&mut self, result: Result<(), String>) {
        let on_gpu = matches!(self.device, Device::Gpu(_));
        if result.is_err() && on_gpu && self.device_lost().is_none() {
            // A failed readback can come before the device's loss is announced.
            next_frame().await;
        }
        let result = match self.device_lost() {
            Some(why) => self.recover(why).await,
            None => result,
        };
        if let Err(e) = result {
            self.sampler = None;
            with(|s| s.status.running = false);
            api::show_running(false);
            show_error(Some(e));
        }
    }

    /// A new session from the controls, the GPT sized to this GPU first when its size is
    /// auto; on invalid settings nothing changes.
    async fn reset(&mut self) -> Result<(), String> {
        self.resets_done = with(|s| s.resets_asked);
        let task = settings::selected_task();
        let auto = task == Task::Text && settings::selected_preset().is_none();
        let note = if auto {
            Some(self.autosize().await?)
        } else {
            None
        };
        self.build_session(task).await?;
        if self.stale() {
            return Ok(());
        }
        // The run that ends is kept before the list is drawn, so that it is in it; runs
        // checked for another task are dropped with that task's list.
        with(|s| runs::keep(&s.run));
        let run = runs::Run::begin(js_sys::Date::now() as u64);
        runs::show_list(&run, &runs::checked());
        let chosen = runs::checked();
        pad::clear_pad();
        dom::set_text("pad-guess", pad::PAD_PROMPT);
        with(|s| {
            s.run = run;
            s.overlays = runs::overlays(&chosen);
            s.history.clear();
            s.flows.clear();
            s.selected_digit = None;
            s.chosen_cell = None;
            s.drawn = false;
            s.status = Status {
                task,
                adapter: s.status.adapter.clone(),
                running: s.status.running,
                ..Default::default()
            };
        });
        show_error(None);
        let own = task.point_set().is_some() && with(|s| s.own_points.is_some());
        let note = if own {
            let data = self.session.as_ref().and_then(|s| s.labelled());
            let n = data.map_or(0, |d| d.train.len() + d.val.len());
            Some(format!("Training on your {n} points, scaled into the plane (the noise setting does not apply to them)."))
        } else {
            note
        };
        show_note(note);
        api::update_url();
        dom::set_text("sample-out", "");
        self.sampler = None;
        if let Some(session) = &self.session {
            summary::show(session);
            if let ModelConfig::Gpt(g) = &session.config.model {
                text_views::offer_choices(g.layers, g.heads);
            }
        }
        self.evaluate(None).await
    }

    /// Steps for the next frame: about FRAME_WORK_S of work at the measured rate (one step
    /// until there is a rate).
    fn steps_per_frame(&self) -> u64 {
        let steps = self.rate.map_or(1.0, |r| (r * FRAME_WORK_S).ceil());
        (steps as u64).clamp(1, MAX_STEPS_PER_FRAME)
    }

    /// True when a Reset was asked for after the one that made this session (a task switched
    /// while a step or an evaluation was under way): the session's figures must not be shown,
    /// and training waits for that Reset.
    fn stale(&self) -> bool {
        with(|s| s.resets_asked != self.resets_done)
    }

    /// Replaces the session with a new one of `task` from the controls, its figures zeroed.
    async fn build_session(&mut self, task: Task) -> Result<(), String> {
        // The data's size bounds the batch the settings may ask for, so data comes first: from
        // a noise the settings check next (an invalid one is marked there, not used here).
        let noise = dom::value("noise")
            .parse()
            .ok()
            .filter(|n| (0.0..=1.0).contains(n))
            .unwrap_or(0.05);
        let seed = dom::value("seed").parse().unwrap_or(0);
        let data = self.data(task, noise, seed).await?;
        let (vocab, examples) = match &data {
            TaskData::Text(t) => (t.vocab.len(), t.train.len()),
            TaskData::Labelled(d) => (0, d.train.len()),
        };
        let Some(mut config) = settings::read(task, vocab, examples) else {
            return Err(SETTINGS_INVALID.into());
        };
        config.eval_every = if task == Task::Digits {
            DIGITS_EVAL_EVERY
        } else {
            EVAL_EVERY
        };
        config.eval_chars = PAGE_EVAL_CHARS;
        let data = if task.point_set().is_some() {
            self.data(task, config.noise, config.seed).await?
        } else {
            data
        };
        let session = Session::new(config, data, &self.device).map_err(|e| e.sentence())?;
        // The old model's buffers return to the pool; free them, since the new model's sizes
        // may differ (trying many sizes would otherwise keep them all).
        self.session = Some(session);
        if let Device::Gpu(gpu) = &self.device {
            gpu.flush();
            gpu.release_free_buffers();
        }
        self.rate = None;
        self.trained_ms = 0.0;
        self.best = BestKeeper::new(None);
        self.kept = None;
        self.recoveries = 0;
        with(|s| s.status.kept_step = None);
        Ok(())
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
        let first = session.step;
        let (every, end) = (session.config.eval_every, session.config.steps);
        loop {
            // The step an evaluation follows keeps its gradient norms for the flow chart.
            if (session.step + 1) % every == 0 || then_evaluate || session.step + 1 == end {
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
        let train = session.check().await.map_err(|e| e.sentence())?;
        if self.stale() {
            return Ok(());
        }
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        let (step, taken) = (session.step, session.step - first);
        let due = step % every == 0 || then_evaluate || finished;
        if due {
            self.evaluate(Some(train)).await?;
            if finished {
                self.finish();
            }
        } else {
            with(|s| {
                s.status.step = step;
                s.status.train_loss = Some(train);
                // A training point every fifth of an evaluation interval or so: enough for the
                // smoothed curve, few enough to redraw every frame.
                if s.history.last().is_none_or(|p| p.step + every / 5 <= step) {
                    s.history.push(Point {
                        step,
                        train: Some(train),
                        val: None,
                        acc: None,
                    });
                }
            });
        }
        // Time and rate count the evaluations too: they are the run's wall time.
        let took = now_ms() - start;
        self.trained_ms += took;
        let rate = taken as f32 / (took as f32 / 1000.0).max(1e-3);
        let keep = RATE_SMOOTHING;
        self.rate = Some(self.rate.map_or(rate, |r| keep * r + (1.0 - keep) * rate));
        self.show_stats();
        Ok(())
    }

    /// Pauses at the run's step count, where its schedule ends, and says how it went.
    fn finish(&self) {
        with(|s| {
            s.status.running = false;
            runs::keep(&s.run);
        });
        api::show_running(false);
        let Some((loss, step)) = self.best.best() else {
            return;
        };
        let steps = self.session.as_ref().map_or(0, |s| s.step);
        show_note(Some(format!(
            "Done: {steps} steps, the run's length. The best validation loss was {loss:.3}, at step {step}. Train goes on at the schedule's last learning rate."
        )));
    }

    /// Validation figures, a point on the charts and fresh views.
    async fn evaluate(&mut self, train: Option<f32>) -> Result<(), String> {
        let Some(session) = self.session.as_mut() else {
            return Ok(());
        };
        let eval = session.evaluate().await.map_err(|e| e.sentence())?;
        let flow = session.flow().await.map_err(|e| e.sentence())?;
        let step = session.step;
        if self.stale() {
            return Ok(());
        }
        self.best.observe(eval.loss, step);
        with(|s| {
            s.status.step = step;
            s.status.train_loss = train.or(s.status.train_loss);
            s.status.val_loss = Some(eval.loss);
            s.status.val_acc = eval.accuracy;
            s.history.push(Point {
                step,
                train,
                val: Some(eval.loss),
                acc: eval.accuracy,
            });
            if let Some(flow) = flow.filter(|f| s.flows.last().is_none_or(|l| l.step < f.step)) {
                s.flows.push(flow);
            }
            s.run.add(step, eval.loss);
        });
        if now_ms() - self.run_kept_ms >= RUN_KEEP_EVERY_MS {
            with(|s| runs::keep(&s.run));
            self.run_kept_ms = now_ms();
        }
        self.show_stats();
        self.draw_views().await?;
        if let Some(session) = &self.session {
            let hists = session
                .weight_histograms()
                .await
                .map_err(|e| e.sentence())?;
            histogram_view::draw(&hists);
        }
        self.keep_weights().await
    }

    async fn save(&self) -> Result<(), String> {
        let session = self
            .session
            .as_ref()
            .ok_or("There is nothing to save yet.")?;
        let bytes = session.save().await.map_err(|e| e.sentence())?;
        api::download(
            &bytes,
            &format!(
                "webgrad-{}-step{}.safetensors",
                session.config.task, session.step
            ),
        )
    }

    async fn load(&mut self, bytes: &[u8]) -> Result<(), String> {
        let session = self
            .session
            .as_mut()
            .ok_or("Start a run first, then load a checkpoint into it.")?;
        session
            .load(bytes)
            .map_err(|e| format!("That file cannot be loaded: {}", e.sentence()))?;
        // The file is a checkpoint on the CPU side already: resume from it if the GPU is lost.
        let step = session.step;
        self.keep(bytes.to_vec(), step);
        show_error(None);
        self.evaluate(None).await
    }
}
