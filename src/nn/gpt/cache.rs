//! Sampling with a key/value cache: each block keeps the keys and values of the positions seen
//! so far, so that a new token costs one position's work instead of the whole context's. The
//! attention of the new positions over the cached ones is composed of products and a softmax
//! (a few positions at a time, the fused kernels' tiles would sit mostly empty).
//!
//! The cache is made once at the positions the sampling will take and each new position is
//! written into it in place (`Tensor::write_at`); attention reads all of it, the positions not
//! yet written masked. Grown by joining old and new, each token made tensors of a new size,
//! and the pool kept the old sizes' buffers on top of a training step's (GPT-2's page
//! fine-tuning held 718 MB while it wrote its samples, 671 otherwise).

use super::{attention_heads, Block, Gpt};
use crate::{Device, Error, Result, Tensor};

/// The keys and values each block has seen, [heads, capacity, head width] per block, made at
/// the first forward pass.
pub struct KvCache {
    layers: Vec<(Tensor, Tensor)>,
    len: usize,
    capacity: usize,
}

impl KvCache {
    /// A cache for `positions` positions at most (and at most the model's context).
    pub fn new(positions: usize) -> KvCache {
        KvCache {
            layers: Vec::new(),
            len: 0,
            capacity: positions,
        }
    }

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
        let capacity = cache.capacity.min(self.config.context);
        if tokens.shape()[0] != 1 || n == 0 || past + n > capacity {
            return Err(Error::Invalid {
                op: "gpt",
                why: format!(
                    "the cache takes one sequence of new tokens within its {capacity} positions: {past} cached and {n} new"
                ),
            });
        }
        crate::no_grad(|| {
            let device = tokens.device();
            if cache.layers.is_empty() {
                cache.layers = self.empty_cache(capacity, device)?;
            }
            let positions =
                Tensor::from_u32((past as u32..(past + n) as u32).collect(), &[n], device)?;
            let embedded = self
                .tok_emb
                .forward(tokens)?
                .add(&self.pos_emb.forward(&positions)?)?;
            let mask = later_keys_masked(n, past, capacity, device)?;
            let mut x = embedded;
            for (block, kv) in self.blocks.iter().zip(&cache.layers) {
                x = block.forward_cached(&x, self.config.heads, kv, past, &mask)?;
            }
            cache.len += n;
            let last = x.slice(1, n - 1, 1)?.reshape(&[1, self.config.width])?;
            self.logits(&self.ln_f.forward(&last)?)?
                .reshape(&[self.config.vocab])
        })
    }

    /// Zeros for each block's keys and values at `capacity` positions (zeros, not a reused
    /// buffer's leftovers: a masked position's weight is 0, and 0 × NaN would not be).
    fn empty_cache(&self, capacity: usize, device: &Device) -> Result<Vec<(Tensor, Tensor)>> {
        let heads = self.config.heads;
        let shape = [heads, capacity, self.config.width / heads];
        let zeros = || Tensor::full(&shape, 0.0, device);
        self.blocks
            .iter()
            .map(|_| Ok((zeros()?, zeros()?)))
            .collect()
    }
}

impl Block {
    /// The block over `n` new positions [1, n, C] after `past` ones whose keys and values are
    /// in `cache` (their own written there too); `mask` [n, capacity] hides the positions each
    /// may not see.
    fn forward_cached(
        &self,
        x: &Tensor,
        heads: usize,
        cache: &(Tensor, Tensor),
        past: usize,
        mask: &Tensor,
    ) -> Result<Tensor> {
        let (n, c) = (x.shape()[1], x.shape()[2]);
        let qkv = self.qkv.forward(&self.ln1.forward(x)?)?;
        let [q, k, v] = attention_heads(&qkv, heads)?;
        let (keys, values) = cache;
        keys.write_at(1, past, &k)?;
        values.write_at(1, past, &v)?;
        let d = c / heads;
        let scores = q
            .matmul_t(keys, false, true)?
            .scale(1.0 / (d as f32).sqrt())?
            .add(mask)?;
        let heads_out = scores.softmax()?.matmul(values)?;
        let merged = heads_out.permute(&[1, 0, 2])?.reshape(&[1, n, c])?;
        let x = self.proj.forward_residual(&merged, x)?;
        let pre = self.fc.forward(&self.ln2.forward(&x)?)?;
        self.fc_proj.forward_gelu_residual(&pre, &x)
    }
}

/// [n, capacity]: 0 where new position i may look (keys up to past + i), a large negative
/// number where it may not (later positions, and those not written yet).
fn later_keys_masked(n: usize, past: usize, capacity: usize, device: &Device) -> Result<Tensor> {
    let values = (0..n * capacity)
        .map(|i| match i % capacity > past + i / capacity {
            true => -1e9,
            false => 0.0,
        })
        .collect();
    Tensor::from_vec(values, &[n, capacity], device)
}
