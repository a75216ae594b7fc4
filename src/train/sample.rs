//! Sampling text from a GPT: prompt, temperature and top-k, one token at a time.

use super::{Learner, Session};
use crate::data::Vocab;
use crate::nn::{Gpt, Model, Module};
use crate::{no_grad, Error, Result, Tensor};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// Settings of one sampling.
#[derive(Debug, Clone)]
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

/// Generates `settings.tokens` characters after the prompt; `on_text` sees each as it comes.
pub async fn sample(
    gpt: &Gpt,
    vocab: &Vocab,
    settings: &SampleSettings,
    mut on_text: impl FnMut(&str),
) -> Result<String> {
    if !(settings.temperature > 0.0 && settings.temperature.is_finite()) {
        return Err(Error::Invalid {
            op: "sample",
            why: "the temperature must be a positive number".into(),
        });
    }
    let mut tokens = vocab.encode(&settings.prompt)?;
    if tokens.is_empty() {
        tokens.push(
            vocab
                .encode("\n")
                .ok()
                .and_then(|t| t.first().copied())
                .unwrap_or(0),
        );
    }
    let context = gpt.config.context;
    let device = gpt.parameters()[0].1.device().clone();
    let mut rng = SmallRng::seed_from_u64(settings.seed);
    let mut out = String::new();
    for _ in 0..settings.tokens {
        let window = &tokens[tokens.len().saturating_sub(context)..];
        let x = Tensor::from_u32(window.to_vec(), &[1, window.len()], &device)?;
        let logits = no_grad(|| gpt.forward(&x)?.slice(0, window.len() - 1, 1))?
            .to_vec()
            .await?;
        let next = pick(&logits, settings.temperature, settings.top_k, &mut rng);
        tokens.push(next);
        let text = vocab.decode(&[next]);
        on_text(&text);
        out.push_str(&text);
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
        match &self.learner {
            Learner::Text { model, data } => sample(model, &data.vocab, settings, on_text).await,
            Learner::Classifier { .. } => Err(Error::Invalid {
                op: "sample",
                why: "only a GPT on text can generate text".into(),
            }),
        }
    }
}
