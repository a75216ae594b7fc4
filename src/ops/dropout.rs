//! Dropout with a seed, identical on the GPU and the CPU.

use super::{gpu_of, launch1};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::Kernel;
use crate::tensor::{DType, Host, Storage, Tensor};

crate::kernel_params! {
    /// shaders/dropout.wgsl: drop with probability `p`, scale the kept by `scale`.
    struct DropoutParams { n: u32, seed: u32, p: f32, scale: f32 }
}

/// The PCG hash of shaders/dropout_mask.wgsl, bit for bit.
fn pcg(v: u32) -> u32 {
    let state = v.wrapping_mul(747796405).wrapping_add(2891336453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277803737);
    (word >> 22) ^ word
}

/// Whether element `i` survives dropout with probability `p` of dropping under `seed`.
fn kept(i: u32, seed: u32, p: f32) -> bool {
    let u = (pcg(i ^ pcg(seed)) >> 8) as f32 / 16_777_216.0;
    u >= p
}

/// One dropout: the probability of dropping an element and the seed that picks them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DropoutMask {
    pub(crate) p: f32,
    pub(crate) seed: u32,
}

impl DropoutMask {
    /// A dropout of probability `p`, which must be in [0, 1).
    pub(crate) fn new(p: f32, seed: u32) -> Result<DropoutMask> {
        if !(0.0..1.0).contains(&p) {
            return Err(Error::Invalid {
                op: "dropout",
                why: format!("the drop probability must be in [0, 1), got {p}"),
            });
        }
        Ok(DropoutMask { p, seed })
    }

    /// What the kept elements are multiplied by.
    pub(crate) fn scale(&self) -> f32 {
        1.0 / (1.0 - self.p)
    }

    /// Element `i` of a tensor after this dropout, on the CPU.
    pub(crate) fn apply(&self, i: usize, v: f64) -> f64 {
        match kept(i as u32, self.seed, self.p) {
            true => v * self.scale() as f64,
            false => 0.0,
        }
    }
}

/// Dropout, as recorded for backward: the same mask, from the same seed, scales the gradient.
struct DropoutOp {
    x: Tensor,
    p: f32,
    seed: u32,
}

impl Backward for DropoutOp {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![g.dropout(self.p, self.seed)?])
    }
}

impl Tensor {
    /// Zeroes each element with probability `p` and scales the rest by 1/(1-p). The same seed
    /// drops the same elements, on either backend.
    pub fn dropout(&self, p: f32, seed: u32) -> Result<Tensor> {
        self.expect_dtype("dropout", DType::F32)?;
        let mask = DropoutMask::new(p, seed)?;
        let scale = mask.scale();
        let storage = match gpu_of(self.device()) {
            None => {
                let x = self.host_f64("dropout")?;
                let y = x.iter().enumerate().map(|(i, &v)| mask.apply(i, v));
                Storage::Host(Host::F(y.collect()))
            }
            Some(gpu) => {
                let kernel = Kernel::new(
                    "dropout",
                    include_str!("../../shaders/dropout.wgsl"),
                    "main",
                );
                let n = self.numel();
                let params = DropoutParams {
                    n: n as u32,
                    seed,
                    p,
                    scale,
                };
                launch1(gpu, &kernel, &params, &[self], n, gpu.groups_elementwise(n))?
            }
        };
        let op = DropoutOp {
            x: self.clone(),
            p,
            seed,
        };
        Ok(Tensor::from_op(
            self.shape().to_vec(),
            DType::F32,
            self.device(),
            storage,
            op,
        ))
    }
}
