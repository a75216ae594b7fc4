//! Sampling text beside training: the worker takes a few characters between chunks of steps,
//! so that Sample never stops the run, and reports each with the probability the model gave it.

use super::{now_ms, Trainer};
use crate::app::protocol::{Report, SampleStart};
use crate::train::{SampleSettings, Task};

/// Milliseconds of sampling at a time, at least one character: between them the loop takes a
/// single step, so a sample comes at several times the pace of the steps' chunks.
const SAMPLE_BUDGET_MS: f64 = 30.0;
/// While a text model trains, it writes a short sample on its own this often, so that the page
/// shows what it writes as it learns without anyone pressing Sample.
const AUTO_SAMPLE_EVERY_MS: f64 = 4000.0;
const AUTO_SAMPLE_CHARS: usize = 100;
/// While a sample is written, the loop trains at most once in this long: each character is a
/// readback that waits behind the steps queued before it, and on a slow GPU one step takes
/// longer than a hundred characters, so sampling gets the time between.
const TRAIN_WHILE_SAMPLING_EVERY_MS: f64 = 500.0;

impl Trainer {
    /// Starts a sampling; what is wrong with its settings is said beside the prompt, and
    /// training goes on.
    pub(super) fn start_sampling(&mut self, settings: SampleSettings) {
        self.begin_sample(settings, false);
    }

    fn begin_sample(&mut self, settings: SampleSettings, automatic: bool) {
        let Some(session) = self.session.as_ref() else {
            self.report(Report::PromptNote(Some("Start a run first.".into())));
            return;
        };
        let start = SampleStart {
            prompt: settings.prompt.clone(),
            step: session.step,
            chars: settings.tokens,
            automatic,
        };
        match session.sampler(settings) {
            Ok(sampler) => {
                self.sampler = Some(sampler);
                self.auto_sampling = automatic;
                self.report(Report::PromptNote(None));
                self.report(Report::SampleStarted(start));
            }
            Err(e) => self.report(Report::PromptNote(Some(e.sentence()))),
        }
    }

    /// Whether the loop should write more of the sample before its next chunk of steps.
    pub(super) fn sample_first(&self) -> bool {
        self.sampler.is_some() && now_ms() - self.trained_ms_at < TRAIN_WHILE_SAMPLING_EVERY_MS
    }

    /// While a text model trains and no sample is being written, one every few seconds, from
    /// the page's prompt and sampling controls.
    pub(super) fn sample_on_its_own(&mut self) {
        let Some(session) = self.session.as_ref() else {
            return;
        };
        let (last_ms, last_step) = self.auto_sampled;
        let due = now_ms() - last_ms >= AUTO_SAMPLE_EVERY_MS && session.step != last_step;
        if !self.running || self.sampler.is_some() || session.config.task != Task::Text || !due {
            return;
        }
        let Some(mut settings) = self.choices.sampling.clone() else {
            return;
        };
        settings.tokens = AUTO_SAMPLE_CHARS;
        settings.seed = settings.seed.wrapping_add(session.step);
        self.auto_sampled = (now_ms(), session.step);
        self.begin_sample(settings, true);
    }

    /// Takes the sampling on by a few characters.
    pub(super) async fn sample_some(&mut self) -> Result<(), String> {
        let (Some(session), Some(sampler)) = (self.session.as_ref(), self.sampler.as_mut()) else {
            return Ok(());
        };
        let start = now_ms();
        let mut made = Vec::new();
        let mut done = false;
        while !done && (now_ms() - start < SAMPLE_BUDGET_MS || made.is_empty()) {
            match session
                .sample_next(sampler)
                .await
                .map_err(|e| e.sentence())?
            {
                Some(s) => made.push(s),
                None => done = true,
            }
        }
        if done {
            self.sampler = None;
            // The next sample of training's own comes a period after this one ends, however
            // long it took: on a slow GPU they would otherwise run back to back.
            if self.auto_sampling {
                self.auto_sampled.0 = now_ms();
            }
        }
        if !self.stale() {
            self.report(Report::Sampled(made));
        }
        Ok(())
    }
}
