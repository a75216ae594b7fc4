//! Sampling text beside training: the worker takes a few characters between chunks of steps,
//! so that Sample never stops the run, and reports each with the probability the model gave it.

use super::{now_ms, Trainer};
use crate::app::protocol::Report;
use crate::train::SampleSettings;

/// Milliseconds of sampling at a time, at least one character.
const SAMPLE_BUDGET_MS: f64 = 8.0;

impl Trainer {
    /// Starts a sampling; what is wrong with its settings is said beside the prompt, and
    /// training goes on.
    pub(super) fn start_sampling(&mut self, settings: SampleSettings) {
        let Some(session) = self.session.as_ref() else {
            self.report(Report::PromptNote(Some("Start a run first.".into())));
            return;
        };
        let prompt = settings.prompt.clone();
        match session.sampler(settings) {
            Ok(sampler) => {
                self.sampler = Some(sampler);
                self.report(Report::PromptNote(None));
                self.report(Report::SampleStarted(prompt));
            }
            Err(e) => self.report(Report::PromptNote(Some(e.sentence()))),
        }
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
        }
        if !self.stale() {
            self.report(Report::Sampled(made));
        }
        Ok(())
    }
}
