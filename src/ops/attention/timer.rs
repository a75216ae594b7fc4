//! One attention shape timed as each of its paths (choice.rs) for the autotuner
//! (src/tune/attention.rs): a forward and a backward pass of a packed [B, T, 3C] input of
//! zeros, as a training step runs them: on the matrix units in f16, as a GPT's products store
//! it for them (`attention_reads_f16`).

use super::choice::dims_of;
use super::Dims;
use crate::autograd::with_grad;
use crate::error::Result;
use crate::gpu::{AttentionPath, AttentionShape, Gpu};
use crate::ops::paced::Paced;
use crate::tensor::{Device, Tensor};
use std::rc::Rc;

/// The most floats the timed input, output and gradients may hold together (256 MiB): the
/// step that ran the shape held them, but the timing holds them beside its free buffers.
const MOST_TIMED_FLOATS: usize = 64 << 20;

pub(crate) struct AttentionTimer {
    dm: Dims,
    qkv: Tensor,
    g: Tensor,
    /// The input and the output's gradient in f16 for the matrix units' path, in an f16 run.
    halves: Option<[Tensor; 2]>,
    paced: Paced,
}

impl AttentionTimer {
    /// The input and the output's gradient of `shape` on `gpu`; None where they would hold
    /// more than MOST_TIMED_FLOATS.
    pub(crate) fn new(gpu: &Rc<Gpu>, shape: AttentionShape) -> Result<Option<AttentionTimer>> {
        let dm = dims_of(shape)?;
        let values = dm.batch * dm.t * dm.c;
        // The input, its gradient, the output and its gradient, and the halves.
        if values.saturating_mul(10) > MOST_TIMED_FLOATS {
            return Ok(None);
        }
        let device = Device::Gpu(gpu.clone());
        let qkv = Tensor::zeros(&[dm.batch, dm.t, 3 * dm.c], &device)?;
        let g = Tensor::zeros(&[dm.batch, dm.t, dm.c], &device)?;
        Ok(Some(AttentionTimer {
            dm,
            halves: match shape.f16 {
                true => Some([qkv.to_f16()?.with_grad(), g.to_f16()?]),
                false => None,
            },
            qkv: qkv.with_grad(),
            g,
            paced: Paced::new(gpu),
        }))
    }

    /// Sets how many passes each timing runs (`Paced::pace`).
    pub(crate) async fn pace(&self, path: AttentionPath) -> Result<()> {
        self.paced.pace(|| self.run(path)).await
    }

    /// Seconds a forward and backward pass take on `path` (`Paced::seconds`).
    pub(crate) async fn seconds(&self, path: AttentionPath) -> Result<f64> {
        self.paced.seconds(|| self.run(path)).await
    }

    fn run(&self, path: AttentionPath) -> Result<()> {
        let [qkv, g] = match (path, &self.halves) {
            (AttentionPath::Matrix, Some([qkv, g])) => [qkv, g],
            _ => [&self.qkv, &self.g],
        };
        with_grad(|| {
            let out = qkv.attention_packed_on(self.dm.heads, Some(path))?;
            drop(out.backward_from(g)?);
            Ok(())
        })
    }
}
