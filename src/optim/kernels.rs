//! The update kernels (shaders/sgd.wgsl, shaders/adam.wgsl): their parameters and launch.

use super::{OptimizerConfig, Rule};
use crate::gpu::{Binding, Gpu, Kernel};
use crate::Result;

crate::kernel_params! {
    /// shaders/sgd.wgsl.
    struct SgdParams {
        n: u32,
        lr: f32,
        momentum: f32,
        weight_decay: f32,
        nesterov: u32,
        first_step: u32,
        max_norm: f32,
    }
}

crate::kernel_params! {
    /// shaders/adam.wgsl; `decoupled` is AdamW's weight decay.
    struct AdamParams {
        n: u32,
        lr: f32,
        beta1: f32,
        beta2: f32,
        eps: f32,
        weight_decay: f32,
        bias_correction1: f32,
        bias_correction2: f32,
        decoupled: u32,
        max_norm: f32,
        step: f32,
    }
}

/// Records the update of `n` parameters at step `step` (from 1) with learning rate `lr` and
/// weight decay `wd`, its gradients unscaled by the loss scale's guide where `scaled`;
/// `bindings` are the gradients, the squared gradient norm (or the guide), the parameters and
/// the state.
pub(super) fn record_update(
    gpu: &Gpu,
    c: &OptimizerConfig,
    (step, n, lr, wd, scaled): (i32, usize, f32, f32, bool),
    bindings: &[Binding],
) -> Result<()> {
    let max_norm = c.clip.unwrap_or(f32::INFINITY);
    let groups = gpu.groups_elementwise(n);
    match c.rule {
        Rule::Sgd { momentum, nesterov } => {
            let kernel = Kernel::new("sgd", include_str!("../../shaders/sgd.wgsl"), "main")
                .constant("SCALED", scaled);
            let params = SgdParams {
                n: n as u32,
                lr,
                momentum,
                weight_decay: wd,
                nesterov: nesterov as u32,
                first_step: (step == 1) as u32,
                max_norm,
            };
            gpu.dispatch(&kernel, &params, bindings, groups)
        }
        Rule::Adam { beta1, beta2, eps } | Rule::AdamW { beta1, beta2, eps } => {
            let kernel = Kernel::new("adam", include_str!("../../shaders/adam.wgsl"), "main")
                .constant("SCALED", scaled);
            let params = AdamParams {
                n: n as u32,
                lr,
                beta1,
                beta2,
                eps,
                weight_decay: wd,
                bias_correction1: 1.0 - beta1.powi(step),
                bias_correction2: 1.0 - beta2.powi(step),
                decoupled: matches!(c.rule, Rule::AdamW { .. }) as u32,
                max_norm,
                step: step as f32,
            };
            gpu.dispatch(&kernel, &params, bindings, groups)
        }
    }
}
