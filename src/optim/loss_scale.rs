//! Dynamic loss scaling for mixed precision, as PyTorch's `GradScaler` (but kept within
//! [1, 2^24]: shaders/loss_scale.wgsl says why): the loss is multiplied
//! by a scale before backward, so that gradients rounded to f16 as product operands keep their
//! small values (a character model's logits' gradients are near 1e-5, where f16 has few bits
//! left); the update unscales them, and a step whose gradients overflowed is skipped, its
//! weights and moments untouched, the scale halved. After `growth_interval` clean steps the
//! scale doubles. All on the GPU (shaders/loss_scale.wgsl): nothing is read back in a step.

use crate::gpu::{Binding, Kernel};
use crate::ops::gpu_of;
use crate::{Device, Error, Result, Tensor};

/// PyTorch's defaults: a first scale of 2^16, doubled after 2,000 clean steps.
pub const INITIAL_SCALE: f32 = 65536.0;
pub const GROWTH_INTERVAL: u32 = 2000;

crate::kernel_params! {
    /// shaders/loss_scale.wgsl.
    struct LossScaleParams { growth_interval: u32 }
}

/// The scale and its counts, on the GPU.
pub struct LossScale {
    /// [1]: what the loss is multiplied by.
    scale: Tensor,
    /// [2] u32: clean steps since the scale last changed, steps skipped in all.
    counts: Tensor,
    /// [4]: what the update kernels read (shaders/adam.wgsl, `SCALED`).
    guide: Tensor,
    growth_interval: u32,
}

impl LossScale {
    pub fn new(device: &Device, initial: f32, growth_interval: u32) -> Result<LossScale> {
        Ok(LossScale {
            scale: Tensor::from_vec(vec![initial], &[1], device)?,
            counts: Tensor::from_u32(vec![0, 0], &[2], device)?,
            guide: Tensor::from_vec(vec![0.0, 1.0, 0.0, 0.0], &[4], device)?,
            growth_interval: growth_interval.max(1),
        })
    }

    /// The loss times the scale: what backward starts from.
    pub fn scaled(&self, loss: &Tensor) -> Result<Tensor> {
        loss.mul(&self.scale)
    }

    /// Squared norms of the scaled gradients as the unscaled gradients' (divided by the scale
    /// squared, on the GPU): what the page's gradient flow shows.
    pub fn unscaled_squares(&self, squares: &Tensor) -> Result<Tensor> {
        squares.div(&self.scale.mul(&self.scale)?)
    }

    /// Records the step's check: from the squared norm of the scaled gradients, the guide the
    /// update reads (returned), and the scale and counts for the next step.
    pub(super) fn record(&self, norm_sq: &Tensor) -> Result<Tensor> {
        let op = "loss scale";
        let gpu = gpu_of(norm_sq.device()).ok_or_else(|| Error::Invalid {
            op,
            why: "losses are scaled on the GPU only".into(),
        })?;
        let (n, s, c, g) = (
            norm_sq.buffer(op)?,
            self.scale.buffer(op)?,
            self.counts.buffer(op)?,
            self.guide.buffer(op)?,
        );
        let bindings = [
            Binding::read(&n),
            Binding::write(&s),
            Binding::write(&c),
            Binding::write(&g),
        ];
        let kernel = Kernel::new(
            "loss_scale",
            include_str!("../../shaders/loss_scale.wgsl"),
            "main",
        );
        let params = LossScaleParams {
            growth_interval: self.growth_interval,
        };
        gpu.dispatch(&kernel, &params, &bindings, [1, 1, 1])?;
        Ok(self.guide.clone())
    }

    /// The scale the next step takes and the steps skipped so far (read back: for reports).
    pub async fn read(&self) -> Result<(f32, u32)> {
        let scale = self.scale.to_vec().await?[0];
        let skipped = self.counts.to_vec_u32().await?[1];
        Ok((scale, skipped))
    }
}
