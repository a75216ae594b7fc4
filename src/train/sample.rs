//! Sampling text from a GPT: prompt, temperature and top-k, one token at a time, each costing
//! one position's work through the key/value cache (`KvCache`). Once the text outgrows the
//! model's context, the cache starts again from the last half of it.

use super::{Learner, Session};
use crate::data::{Tokens, Utf8Stream};
use crate::nn::{Gpt, KvCache};
use crate::{Error, Result, Tensor};
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

/// Picks a token from logits with temperature and top-k: the k likeliest kept (all for 0),
/// then one drawn by its weight, walking the tokens in their own order. Not in the order of
/// their logits: two nearly equal logits would swap places for a rounding difference (the
/// cached and the whole-window forward passes differ by 1e-7) and move every token's share.
fn pick(logits: &[f32], temperature: f32, top_k: usize, rng: &mut SmallRng) -> u32 {
    let kept = top_k_threshold(logits, top_k);
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let weight = |l: f32| match l >= kept {
        true => (((l - m) / temperature) as f64).exp(),
        false => 0.0,
    };
    let total: f64 = logits.iter().map(|&l| weight(l)).sum();
    let mut r = rng.random::<f64>() * total;
    for (i, &l) in logits.iter().enumerate() {
        r -= weight(l);
        if r <= 0.0 && l >= kept {
            return i as u32;
        }
    }
    // Rounding left a sliver of r: the likeliest token.
    logits
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i as u32)
}

/// The k-th largest logit (every token at or above it is kept); below every logit for 0.
fn top_k_threshold(logits: &[f32], top_k: usize) -> f32 {
    if top_k == 0 || top_k >= logits.len() {
        return f32::NEG_INFINITY;
    }
    let mut sorted = logits.to_vec();
    let (_, kth, _) = sorted.select_nth_unstable_by(top_k - 1, |a, b| b.total_cmp(a));
    *kth
}

/// A sampled character and the probability the model gave it (before temperature and top-k:
/// how sure the model itself was).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sampled {
    pub text: String,
    pub probability: f32,
}

/// A sampling under way, a token at a time: the page samples between training steps.
pub struct Sampler {
    tokens: Vec<u32>,
    rng: SmallRng,
    settings: SampleSettings,
    made: usize,
    /// The keys and values of `tokens[cached_from..cached_from + cache.len()]`.
    cache: KvCache,
    cached_from: usize,
    text: Utf8Stream,
}

impl Sampler {
    /// Checks the settings and encodes the prompt (the tokenizer's start when it is empty).
    pub fn new(tokenizer: &dyn Tokens, settings: SampleSettings) -> Result<Sampler> {
        if !(settings.temperature > 0.0 && settings.temperature.is_finite()) {
            return Err(Error::Invalid {
                op: "sample",
                why: "the temperature must be a positive number".into(),
            });
        }
        let mut tokens = tokenizer.encode(&settings.prompt)?;
        if tokens.is_empty() {
            tokens.push(tokenizer.start());
        }
        Ok(Sampler {
            // The positions it will feed (the prompt and each token but the last), and one more.
            cache: KvCache::new(tokens.len().saturating_add(settings.tokens)),
            tokens,
            rng: SmallRng::seed_from_u64(settings.seed),
            settings,
            made: 0,
            cached_from: 0,
            text: Utf8Stream::default(),
        })
    }

    /// True once all the tokens asked for were made.
    pub fn done(&self) -> bool {
        self.made >= self.settings.tokens
    }

    /// The tokens so far, the prompt's first.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// The next token after the last `context` ones, and the text it completes.
    pub async fn next(&mut self, gpt: &Gpt, tokenizer: &dyn Tokens) -> Result<Sampled> {
        let logits = self.logits(gpt)?.to_vec().await?;
        let (temperature, top_k) = (self.settings.temperature, self.settings.top_k);
        let next = pick(&logits, temperature, top_k, &mut self.rng);
        self.tokens.push(next);
        self.made += 1;
        Ok(Sampled {
            text: self.text.push(&tokenizer.token_bytes(next)),
            probability: probability(&logits, next as usize),
        })
    }

    /// The logits after the last token, feeding the cache what it has not seen; a cache that
    /// would outgrow the context starts again from the last half of it.
    fn logits(&mut self, gpt: &Gpt) -> Result<Tensor> {
        let context = gpt.config.context;
        // The cache holds tokens[cached_from..] once fed the new ones.
        if self.tokens.len() - self.cached_from > context {
            let keep = (context / 2).max(1).min(self.tokens.len());
            self.cache = KvCache::new(keep.saturating_add(self.settings.tokens - self.made));
            self.cached_from = self.tokens.len() - keep;
        }
        let new = &self.tokens[self.cached_from + self.cache.len()..];
        let x = Tensor::from_u32(new.to_vec(), &[1, new.len()], gpt.device())?;
        gpt.forward_cached(&x, &mut self.cache)
    }
}

/// softmax(logits)[i].
fn probability(logits: &[f32], i: usize) -> f32 {
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let total: f64 = logits.iter().map(|&l| ((l - m) as f64).exp()).sum();
    (((logits[i] - m) as f64).exp() / total) as f32
}

/// Generates `settings.tokens` tokens after the prompt; `on_text` sees the text as it comes.
pub async fn sample(
    gpt: &Gpt,
    tokenizer: &dyn Tokens,
    settings: &SampleSettings,
    mut on_text: impl FnMut(&str),
) -> Result<String> {
    let mut sampler = Sampler::new(tokenizer, settings.clone())?;
    let mut out = String::new();
    while !sampler.done() {
        let sampled = sampler.next(gpt, tokenizer).await?;
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

    fn gpt(&self) -> Result<(&Gpt, &dyn Tokens)> {
        match &self.learner {
            Learner::Text { model, data } => Ok((model, data.tokenizer.tokens()?)),
            Learner::Classifier { .. } => Err(Error::Invalid {
                op: "sample",
                why: "only a GPT on text can generate text".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Natively: the tests wait on the GPU with pollster.
    #[cfg(not(target_arch = "wasm32"))]
    mod with_a_model {
        use super::*;
        use crate::data::Vocab;
        use crate::nn::{GptConfig, Init, Model, Preset};
        use crate::Device;

        /// A tiny GPT of random weights over 65 tokens, on `device`.
        fn tiny(device: &Device) -> Gpt {
            let config = GptConfig::preset(Preset::Tiny, 65);
            Gpt::new(&config, &mut Init::new(7, device)).unwrap()
        }

        /// The tokens sampled after `prompt` by running the whole window each time, as sampling
        /// did before the cache.
        fn uncached(gpt: &Gpt, prompt: &[u32], settings: &SampleSettings) -> Vec<u32> {
            let mut rng = SmallRng::seed_from_u64(settings.seed);
            let mut tokens = prompt.to_vec();
            let device = gpt.device().clone();
            for _ in 0..settings.tokens {
                let x = Tensor::from_u32(tokens.clone(), &[1, tokens.len()], &device).unwrap();
                let last =
                    crate::no_grad(|| gpt.forward(&x)?.slice(0, tokens.len() - 1, 1)).unwrap();
                let logits = pollster::block_on(last.to_vec()).unwrap();
                tokens.push(pick(
                    &logits,
                    settings.temperature,
                    settings.top_k,
                    &mut rng,
                ));
            }
            tokens
        }

        #[test]
        fn the_cached_sampler_picks_the_tokens_of_the_whole_window() {
            let gpu = pollster::block_on(crate::Gpu::new()).map(Device::Gpu);
            for device in [Device::Cpu].into_iter().chain(gpu) {
                let gpt = tiny(&device);
                let vocab = Vocab {
                    chars: (0..65u8).map(|b| (b'0' + b % 60) as char).collect(),
                };
                let settings = SampleSettings {
                    prompt: String::new(),
                    tokens: 30,
                    temperature: 1.0,
                    top_k: 0,
                    seed: 3,
                };
                let mut sampler = Sampler::new(&vocab, settings.clone()).unwrap();
                let prompt = sampler.tokens().to_vec();
                while !sampler.done() {
                    pollster::block_on(sampler.next(&gpt, &vocab)).unwrap();
                }
                // 31 tokens fit the context of 32: the cache never restarted.
                let on = if device.is_gpu() {
                    "the GPU"
                } else {
                    "the CPU"
                };
                let want = uncached(&gpt, &prompt, &settings);
                assert_eq!(sampler.tokens(), want, "on {on}");
                // Past the context of 32 the cache starts again from the last 16 tokens.
                let long = SampleSettings {
                    tokens: 80,
                    ..settings.clone()
                };
                let mut sampler = Sampler::new(&vocab, long).unwrap();
                while !sampler.done() {
                    pollster::block_on(sampler.next(&gpt, &vocab)).unwrap();
                }
                assert_eq!(sampler.tokens().len(), 81, "on {on}");
            }
        }

        #[test]
        fn cached_logits_equal_the_whole_windows() {
            let device = Device::Cpu;
            let gpt = tiny(&device);
            let tokens: Vec<u32> = (0..30).map(|i| (i * 7 % 65) as u32).collect();
            let x = Tensor::from_u32(tokens.clone(), &[1, 30], &device).unwrap();
            let whole = pollster::block_on(gpt.forward(&x).unwrap().to_vec()).unwrap();
            // Five positions at once, then one at a time.
            let mut cache = KvCache::new(64);
            let first = Tensor::from_u32(tokens[..5].to_vec(), &[1, 5], &device).unwrap();
            let mut got =
                vec![
                    pollster::block_on(gpt.forward_cached(&first, &mut cache).unwrap().to_vec())
                        .unwrap(),
                ];
            for (i, &t) in tokens.iter().enumerate().skip(5) {
                let one = Tensor::from_u32(vec![t], &[1, 1], &device).unwrap();
                let logits = gpt.forward_cached(&one, &mut cache).unwrap();
                got.push(pollster::block_on(logits.to_vec()).unwrap());
                assert_eq!(cache.len(), i + 1);
            }
            for (j, row) in got.iter().enumerate() {
                let position = 4 + j;
                let want = &whole[position * 65..(position + 1) * 65];
                for (g, w) in row.iter().zip(want) {
                    assert!((g - w).abs() < 1e-5, "position {position}: {g} against {w}");
                }
            }
            // Past the context: refused.
            let long = Tensor::from_u32(vec![0; 3], &[1, 3], &device).unwrap();
            assert!(gpt.forward_cached(&long, &mut cache).is_err());
        }
    }

    #[test]
    fn top_k_keeps_only_the_likeliest() {
        let logits = [0.0, 3.0, 1.0, 2.0, -1.0];
        let mut rng = SmallRng::seed_from_u64(1);
        let picked: std::collections::BTreeSet<u32> =
            (0..200).map(|_| pick(&logits, 1.0, 2, &mut rng)).collect();
        assert_eq!(picked.into_iter().collect::<Vec<_>>(), [1, 3]);
        // A low temperature picks the likeliest.
        assert_eq!(pick(&logits, 1e-3, 0, &mut rng), 1);
    }

    #[test]
    fn probability_is_the_softmax_of_the_logits() {
        let p = probability(&[0.0, 2f32.ln(), 0.0], 1);
        assert!((p - 0.5).abs() < 1e-6, "{p}");
        assert!((probability(&[1000.0, 0.0], 0) - 1.0).abs() < 1e-6);
    }
}
