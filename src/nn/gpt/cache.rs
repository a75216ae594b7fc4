//! Sampling with a key/value cache: each block keeps the keys and values of the positions seen
//! so far, so that a new token costs one position's work instead of the whole context's. The
//! attention of the new positions over the cached ones is composed of products and a softmax
//! (a few positions at a time, the fused kernels' tiles would sit mostly empty).

use super::{attention_heads, Block, Gpt};
use crate::{Error, Result, Tensor};

/// The keys and values each block has seen, [heads, positions, head width] per block.
#[derive(Default)]
pub struct KvCache {
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
}

impl KvCache {
    /// Positions cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Gpt {
    /// The logits [vocab] after `tokens` [1, n], which follow the `cache.len()` positions the
    /// cache holds; their keys and values are added to it. Without gradients.
    pub fn forward_cached(&self, tokens: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        let (past, n) = (cache.len, tokens.shape()[1]);
        if tokens.shape()[0] != 1 || n == 0 || past + n > self.config.context {
            return Err(Error::Invalid {
                op: "gpt",
                why: format!(
                    "the cache takes one sequence of new tokens within the context of {}: {past} cached and {n} new",
                    self.config.context
                ),
            });
        }
        crate::no_grad(|| {
            let device = tokens.device();
            let positions =
                Tensor::from_u32((past as u32..(past + n) as u32).collect(), &[n], device)?;
            let embedded = self
                .tok_emb
                .forward(tokens)?
                .add(&self.pos_emb.forward(&positions)?)?;
            let mut x = embedded;
            for (i, block) in self.blocks.iter().enumerate() {
                let cached = cache.layers.get(i);
                let (out, kv) = block.forward_cached(&x, self.config.heads, cached, past)?;
                match cache.layers.get_mut(i) {
                    Some(slot) => *slot = kv,
                    None => cache.layers.push(kv),
                }
                x = out;
            }
            cache.len += n;
            let last = x.slice(1, n - 1, 1)?.reshape(&[1, self.config.width])?;
            self.logits(&self.ln_f.forward(&last)?)?
                .reshape(&[self.config.vocab])
        })
    }
}

impl Block {
    /// The block over `n` new positions [1, n, C] after `past` ones whose keys and values are
    /// `cached`; its output and the keys and values of all the positions.
    fn forward_cached(
        &self,
        x: &Tensor,
        heads: usize,
        cached: Option<&(Tensor, Tensor)>,
        past: usize,
    ) -> Result<(Tensor, (Tensor, Tensor))> {
        let (n, c) = (x.shape()[1], x.shape()[2]);
        let qkv = self.qkv.forward(&self.ln1.forward(x)?)?;
        let [q, k, v] = attention_heads(&qkv, heads)?;
        let (k, v) = match cached {
            Some((old_k, old_v)) => (
                Tensor::concat(&[old_k.clone(), k], 1)?,
                Tensor::concat(&[old_v.clone(), v], 1)?,
            ),
            None => (k, v),
        };
        let d = c / heads;
        let mut scores = q
            .matmul_t(&k, false, true)?
            .scale(1.0 / (d as f32).sqrt())?;
        if n > 1 {
            scores = scores.add(&later_keys_masked(n, past, x.device())?)?;
        }
        let heads_out = scores.softmax()?.matmul(&v)?;
        let merged = heads_out.permute(&[1, 0, 2])?.reshape(&[1, n, c])?;
        let x = self.proj.forward_residual(&merged, x)?;
        let pre = self.fc.forward(&self.ln2.forward(&x)?)?;
        Ok((self.fc_proj.forward_gelu_residual(&pre, &x)?, (k, v)))
    }
}

/// [n, past + n]: 0 where new position i may look (keys up to past + i), a large negative
/// number where it may not.
fn later_keys_masked(n: usize, past: usize, device: &crate::Device) -> Result<Tensor> {
    let t = past + n;
    let values = (0..n * t)
        .map(|i| if i % t > past + i / t { -1e9 } else { 0.0 })
        .collect();
    Tensor::from_vec(values, &[n, t], device)
}
