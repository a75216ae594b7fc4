//! Sampling text from a GPT: prompt, temperature and top-k, one token at a time.

use super::{Learner, Session};
use crate::data::Vocab;
use crate::nn::{Gpt, Model, Module};
use crate::{no_grad, Error, Result, Tensor};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// Settings of one sampling.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SampleSettings {
    pub prompt: String,
    pub tokens: usize,
    pub temperature: f32,
    /// Keep only the k most likely characters (0: all).
    pub top_k: usize,
    pub seed: u64,
}

/// Picks a token from logits with temperature and top-k.
fn pick(logits: &[f32], temperature: f32, top_k: usize, rng: &mut SmallRng) -> u32 {
    let mut order: Vec<usize> = (0..logits.len()).collect();
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
    if top_k > 0 {
        order.truncate(top_k);
    }
    let m = logits[order[0]];
    let weights: Vec<f64> = order
        .iter()
        .map(|&i| (((logits[i] - m) / temperature) as f64).exp())
        .collect();
    let mut r = rng.random::<f64>() * weights.iter().sum::<f64>();
    for (w, &i) in weights.iter().zip(&order) {
        r -= w;
        if r <= 0.0 {
            return i as u32;
        }
    }
    order[0] as u32
}

/// A sampled character and the probability the model gave it (before temperature and top-k:
/// how sure the model itself was).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sampled {
    pub text: String,
    pub probability: f32,
}

/// A sampling under way, a character at a time: the page samples between training steps.
pub struct Sampler {
    tokens: Vec<u32>,
    rng: SmallRng,
    settings: SampleSettings,
    made: usize,
}

impl Sampler {
    /// Checks the settings and encodes the prompt (a newline when it is empty).
    pub fn new(vocab: &Vocab, settings: SampleSettings) -> Result<Sampler> {
        if !(settings.temperature > 0.0 && settings.temperature.is_finite()) {
            return Err(Error::Invalid {
                op: "sample",
                why: "the temperature must be a positive number".into(),
            });
        }
        let mut tokens = vocab.encode(&settings.prompt)?;
        if tokens.is_empty() {
            let newline = vocab.encode("\n").ok().and_then(|t| t.first().copied());
            tokens.push(newline.unwrap_or(0));
        }
        Ok(Sampler {
            tokens,
            rng: SmallRng::seed_from_u64(settings.seed),
            settings,
            made: 0,
        })
    }

    /// True once all the characters asked for were made.
    pub fn done(&self) -> bool {
        self.made >= self.settings.tokens
    }

    /// The next character after the last `context` ones.
    pub async fn next(&mut self, gpt: &Gpt, vocab: &Vocab) -> Result<Sampled> {
        let window = &self.tokens[self.tokens.len().saturating_sub(gpt.config.context)..];
        let device = gpt.parameters()[0].1.device().clone();
        let x = Tensor::from_u32(window.to_vec(), &[1, window.len()], &device)?;
        let logits = no_grad(|| gpt.forward(&x)?.slice(0, window.len() - 1, 1))?
            .to_vec()
            .await?;
        let (temperature, top_k) = (self.settings.temperature, self.settings.top_k);
        let next = pick(&logits, temperature, top_k, &mut self.rng);
        self.tokens.push(next);
        self.made += 1;
        Ok(Sampled {
            text: vocab.decode(&[next]),
            probability: probability(&logits, next as usize),
        })
    }
}

/// softmax(logits)[i].
fn probability(logits: &[f32], i: usize) -> f32 {
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f64 = logits.iter().map(|&l| ((l - m) as f64).exp()).sum();
    (((logits[i] - m) as f64).exp() / total) as f32
}

/// Generates `settings.tokens` characters after the prompt; `on_text` sees each as it comes.
pub async fn sample(
    gpt: &Gpt,
    vocab: &Vocab,
    settings: &SampleSettings,
    mut on_text: impl FnMut(&str),
) -> Result<String> {
    let mut sampler = Sampler::new(vocab, settings.clone())?;
    let mut out = String::new();
    while !sampler.done() {
        let sampled = sampler.next(gpt, vocab).await?;
        on_text(&sampled.text);
        out.push_str(&sampled.text);
    }
    Ok(out)
}

impl Session {
    /// Samples from the session's GPT (an error for other models).
    pub async fn sample(
        &self,
        settings: &SampleSettings,
        on_text: impl FnMut(&str),
    ) -> Result<String> {
        let (model, vocab) = self.gpt()?;
        sample(model, vocab, settings, on_text).await
    }

    /// A sampling of the session's GPT to take a character at a time with `sample_next`.
    pub fn sampler(&self, settings: SampleSettings) -> Result<Sampler> {
        Sampler::new(self.gpt()?.1, settings)
    }

    /// The next character of `sampler`, or None once it is done.
    pub async fn sample_next(&self, sampler: &mut Sampler) -> Result<Option<Sampled>> {
        if sampler.done() {
            return Ok(None);
        }
        let (model, vocab) = self.gpt()?;
        sampler.next(model, vocab).await.map(Some)
    }

    fn gpt(&self) -> Result<(&Gpt, &Vocab)> {
        match &self.learner {
            Learner::Text { model, data } => Ok((model, &data.vocab)),
            Learner::Classifier { .. } => Err(Error::Invalid {
                op: "sample",
                why: "only a GPT on text can generate text".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::probability;

    #[test]
    fn probability_is_the_softmax_of_the_logits() {
        let p = probability(&[0.0, 2f32.ln(), 0.0], 1);
        assert!((p - 0.5).abs() < 1e-6, "{p}");
        assert!((probability(&[1000.0, 0.0], 0) - 1.0).abs() < 1e-6);
    }
}
