//! Causal multi-head self-attention as one op: q, k, v [B, T, C] with C split into heads;
//! future positions masked, stable softmax, backward on the GPU. causal.rs takes q, k and v
//! as three tensors, packed.rs as one [B, T, 3C] tensor; tiled.rs holds the
//! FlashAttention-style kernels both use on real GPUs, which never hold the T×T matrix;
//! scores.rs the path through it, faster for long packed sequences on some GPUs; matrix.rs
//! the FlashAttention tiling on the matrix units, for f16 runs on them (natively or in Chrome).
//! choice.rs picks packed attention's path: the one timed fastest on the GPU (timer.rs,
//! src/tune/attention.rs), else a rule.

mod causal;
mod choice;
mod matrix;
mod packed;
mod scores;
mod tiled;
mod timer;

pub(crate) use choice::candidates as attention_candidates;
pub(crate) use scores::scores_bytes;
pub(crate) use timer::AttentionTimer;

use crate::error::{Error, Result};

crate::kernel_params! {
    /// shaders/attention.wgsl, attention_dq.wgsl and attention_dkv.wgsl: the sizes of `Dims`
    /// and the softmax scale.
    struct AttentionParams { batch: u32, t: u32, c: u32, heads: u32, d: u32, scale: f32 }
}

/// The sizes of one attention call.
#[derive(Clone, Copy)]
pub(super) struct Dims {
    pub(super) batch: usize,
    pub(super) t: usize,
    pub(super) c: usize,
    pub(super) heads: usize,
    pub(super) d: usize,
}

impl Dims {
    /// The sizes of [batch, t, c] split into `heads` heads, which must divide c.
    pub(super) fn new(batch: usize, t: usize, c: usize, heads: usize) -> Result<Dims> {
        if heads == 0 || !c.is_multiple_of(heads) {
            return Err(Error::Invalid {
                op: "attention",
                why: format!("{heads} heads do not divide {c} channels"),
            });
        }
        Ok(Dims {
            batch,
            t,
            c,
            heads,
            d: c / heads,
        })
    }
    pub(super) fn scale(&self) -> f64 {
        1.0 / (self.d as f64).sqrt()
    }
    pub(super) fn rows(&self) -> usize {
        self.batch * self.heads * self.t
    }
    fn params(&self) -> AttentionParams {
        AttentionParams {
            batch: self.batch as u32,
            t: self.t as u32,
            c: self.c as u32,
            heads: self.heads as u32,
            d: self.d as u32,
            scale: self.scale() as f32,
        }
    }
    /// Offset of (batch b, position i, head h) in a [B, T, C] tensor.
    fn at(&self, b: usize, i: usize, h: usize) -> usize {
        (b * self.t + i) * self.c + h * self.d
    }
}
