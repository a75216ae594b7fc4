//! Sampling text beside training: the loop takes a few characters each frame, so that Sample
//! never stops the run, and shows each with the probability the model gave it.

use super::{dom, now_ms, text_views, Loop};
use crate::train::SampleSettings;

/// Characters a Sample writes.
const SAMPLE_CHARS: usize = 300;
/// Milliseconds of sampling per frame, at least one character.
const SAMPLE_BUDGET_MS: f64 = 8.0;

impl Loop {
    /// Starts a sampling from the controls' prompt, temperature and top-k. What is wrong with
    /// them is said beside the prompt; training goes on.
    pub(super) fn start_sampling(&mut self) -> Result<(), String> {
        let started = self.begin_sampling();
        dom::note_beside("prompt", started.as_ref().err().map(String::as_str));
        Ok(())
    }

    fn begin_sampling(&mut self) -> Result<(), String> {
        let session = self.session.as_ref().ok_or("Start a run first.")?;
        let settings = SampleSettings {
            prompt: dom::value("prompt"),
            tokens: SAMPLE_CHARS,
            temperature: dom::value("temperature")
                .parse()
                .map_err(|_| "The temperature is not a number.")?,
            top_k: dom::value("top-k")
                .parse()
                .map_err(|_| "Top-k is not a whole number.")?,
            seed: now_ms() as u64,
        };
        let prompt = settings.prompt.clone();
        self.sampler = Some(session.sampler(settings).map_err(|e| e.sentence())?);
        text_views::start_sample(&prompt);
        Ok(())
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
        text_views::add_sampled(&made);
        if done {
            self.sampler = None;
        }
        Ok(())
    }
}
