//! A new run from the page's plan: the data loaded, the settings checked against it, the GPT
//! sized to the device when asked, the session built on the backend chosen, its figures zeroed.

use super::{built, now_ms, Trainer, PAGE_EVAL_CHARS};
use crate::app::form::Form;
use crate::app::protocol::{Plan, Report, SETTINGS_INVALID};
use crate::app::schema;
use crate::gpu::Precision;
use crate::train::routing::Backend;
use crate::train::{routing, BestKeeper, Footprint, Session, Task, TaskData};
use crate::Device;

/// Steps between evaluations in the page: digits runs are the shortest (600 steps by default),
/// so they evaluate a little more often to keep enough points on the validation curve.
const DIGITS_EVAL_EVERY: u64 = 20;
const EVAL_EVERY: u64 = 25;

impl Trainer {
    /// A new session from the plan, the GPT sized to this GPU first when its size is auto; on
    /// invalid settings nothing changes.
    pub(super) async fn reset(&mut self, plan: Plan) -> Result<(), String> {
        self.run = plan.run;
        let task = plan.task;
        let auto = task == Task::Text && schema::sized_automatically(&plan.form);
        self.choices = plan.choices.clone();
        self.plan = Some(plan);
        let sized = match auto {
            true => Some(self.autosize().await?),
            false => None,
        };
        let routed = self.build_session(task).await?;
        if self.stale() {
            return Ok(());
        }
        self.sampler = None;
        self.pad = None;
        let Some(session) = &self.session else {
            return Ok(());
        };
        let own = self.plan.as_ref().is_some_and(|p| p.own_points.is_some());
        let own_points = match session.labelled() {
            Some(d) if own && task.point_set().is_some() => Some(format!(
                "Training on your {} points, scaled into the plane (the noise setting does not apply to them).",
                d.train.len() + d.val.len()
            )),
            _ => None,
        };
        let notes: Vec<String> = [own_points, sized].into_iter().flatten().collect();
        let note = (!notes.is_empty()).then(|| notes.join(" "));
        let mut made = built(session, note);
        made.backend = routed;
        self.report(Report::Built(made));
        self.report(Report::Busy(Some("Evaluating the new model".into())));
        self.evaluate(None, true).await
    }

    /// The settings as the plan has them, checked against the data (the marks go to the page).
    pub(super) fn read_settings(
        &mut self,
        task: Task,
        vocab: usize,
        examples: usize,
    ) -> Option<crate::train::Config> {
        let form = &mut self.plan.as_mut()?.form;
        form.marks.clear();
        let config = schema::read(form, task, vocab, examples);
        let marks = std::mem::take(&mut form.marks);
        self.report(Report::Marks(marks));
        config
    }

    /// Replaces the session with a new one of `task` from the plan, its figures zeroed, on the
    /// backend the plan asks for (on auto, a small model is timed on both) in the precision it
    /// asks for; returns what the page says of the backend's choice, if anything. On an error
    /// the GPU keeps the precision the run before had.
    pub(super) async fn build_session(&mut self, task: Task) -> Result<Option<String>, String> {
        let form = self
            .plan
            .as_ref()
            .map(|p| p.form.clone())
            .unwrap_or_default();
        // The data's size bounds the batch the settings may ask for, so data comes first: from
        // a noise the settings check next (an invalid one is marked there, not used here).
        let noise = form
            .value("noise")
            .parse()
            .ok()
            .filter(|n| (0.0..=1.0).contains(n))
            .unwrap_or(0.05);
        let seed = form.value("seed").parse().unwrap_or(0);
        let data = self.data(task, noise, seed).await?;
        let (vocab, examples) = match &data {
            TaskData::Text(t) => (t.tokenizer.len(), t.train.len()),
            TaskData::Labelled(d) => (0, d.train.len()),
        };
        let Some(mut config) = self.read_settings(task, vocab, examples) else {
            return Err(SETTINGS_INVALID.into());
        };
        config.eval_every = if task == Task::Digits {
            DIGITS_EVAL_EVERY
        } else {
            EVAL_EVERY
        };
        config.eval_chars = PAGE_EVAL_CHARS;
        let before = match &self.device {
            Device::Gpu(gpu) => gpu.precision().map(|c| c.asked),
            Device::Cpu => None,
        };
        self.set_precision(&form)?;
        let data = if task.point_set().is_some() {
            self.data(task, config.noise, config.seed).await?
        } else {
            data
        };
        let model = Footprint::of(&config).model_in_words();
        self.report(Report::Busy(Some(format!("Building {model}"))));
        let build = |d: &Device| Session::new(config.clone(), data.clone(), d);
        let backend = schema::backend(&form);
        let routed = routing::route(backend, &self.device, build, now_ms).await;
        let (session, route) = match routed {
            Ok(routed) => routed,
            Err(e) => {
                if let Device::Gpu(gpu) = &self.device {
                    let _ = gpu.set_precision(before.unwrap_or_default());
                }
                return Err(e.sentence());
            }
        };
        self.begin(session);
        self.lora_base = None;
        Ok(route.sentence())
    }

    /// Sets the precision the plan asks for on the GPU, before the session is built (its
    /// optimizer scales the losses only under f16; `Gpu::precision` keeps the sentence the page
    /// shows), or marks the control where f16 cannot be had.
    fn set_precision(&mut self, form: &Form) -> Result<(), String> {
        let asked = schema::precision(form);
        let refused = match (&self.device, schema::backend(form)) {
            (Device::Gpu(gpu), Backend::Auto | Backend::Gpu) => match gpu.set_precision(asked) {
                Ok(_) => return Ok(()),
                Err(e) => e.sentence(),
            },
            _ if asked == Precision::F16 => "The CPU backend computes in f32 only.".to_string(),
            _ => return Ok(()),
        };
        self.report(Report::Marks(vec![("precision".into(), Some(refused))]));
        Err(SETTINGS_INVALID.into())
    }

    /// Makes `session` the run's, its figures zeroed.
    pub(super) fn begin(&mut self, session: Session) {
        // The old model's buffers return to the pool; free them, since the new model's sizes
        // may differ (trying many sizes would otherwise keep them all).
        self.session = Some(session);
        self.device.release_free_buffers();
        self.rate = None;
        self.trained_ms = 0.0;
        self.best = BestKeeper::new(None);
        self.evals.clear();
        self.runaway_said = false;
        self.kept = None;
        self.recoveries = 0;
        self.auto_sampled = (f64::NEG_INFINITY, u64::MAX);
    }
}
