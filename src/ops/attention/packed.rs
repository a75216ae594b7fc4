//! Causal attention over one packed [B, T, 3C] tensor holding q, k and v side by side, as one
//! linear layer makes them: the tiled GPU kernels read the three in place and write their
//! gradients side by side; elsewhere the three are sliced out and `attention` runs. On the
//! matrix units the tensor may be f16, as its product stored it (`attention_reads_f16`).

use super::causal::attention_backward;
use super::{choice, matrix, scores, tiled, Dims};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::{AttentionPath, Gpu, MatrixUnits, PooledBuffer};
use crate::ops::gpu_of;
use crate::tensor::{DType, Storage, Tensor};
use crate::Device;
use std::rc::Rc;

/// The sizes of attention over a packed [B, T, 3C] tensor (q, k and v side by side).
fn packed_dims(qkv: &Tensor, heads: usize) -> Result<Dims> {
    let name = "attention";
    qkv.expect_float(name)?;
    if qkv.rank() != 3 || !qkv.shape()[2].is_multiple_of(3) {
        return Err(Error::Invalid {
            op: name,
            why: format!(
                "packed q, k and v must be [batch, time, 3 × channels], not {:?}",
                qkv.shape()
            ),
        });
    }
    Dims::new(qkv.shape()[0], qkv.shape()[1], qkv.shape()[2] / 3, heads)
}

/// The GPU and the tiled kernels' plan, where they can run this attention.
fn tiled(qkv: &Tensor, dm: Dims) -> Option<(&Rc<Gpu>, tiled::Plan)> {
    let gpu = gpu_of(qkv.device())?;
    Some((gpu, tiled::plan(gpu, dm)?))
}

/// q, k and v sliced out of a packed tensor, outside the graph.
fn unpack(qkv: &Tensor, c: usize) -> Result<[Tensor; 3]> {
    Ok([
        qkv.slice(2, 0, c)?.detach(),
        qkv.slice(2, c, c)?.detach(),
        qkv.slice(2, 2 * c, c)?.detach(),
    ])
}

/// Attention over a packed [B, T, 3C] tensor, as recorded for backward, with the
/// log-sum-exp of each row of scores and the path the forward took (the matrix units' or the
/// tiled kernels), which the backward takes too where it still can.
struct AttentionPacked {
    qkv: Tensor,
    heads: usize,
    lse: Tensor,
    path: AttentionPath,
}

impl Backward for AttentionPacked {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.qkv]
    }
    /// The matrix units' kernels read dO in q's, k's and v's type: f16 where those are.
    fn reads_f16_gradient(&self) -> bool {
        self.path == AttentionPath::Matrix && self.qkv.dtype() == DType::F16
    }
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![attention_packed_backward(
            &self.qkv,
            [out, &self.lse, g],
            (self.heads, self.path),
        )?])
    }
}

/// The GPU and its matrix units, where attention of these sizes runs on them (matrix.rs).
fn on_matrix_units(qkv: &Tensor, dm: Dims) -> Option<(&Rc<Gpu>, MatrixUnits)> {
    let gpu = gpu_of(qkv.device())?;
    Some((gpu, matrix::units(gpu, dm)?))
}

/// Gradient of the packed tensor: dq, dk and dv side by side.
fn attention_packed_backward(
    qkv: &Tensor,
    [out, lse, g]: [&Tensor; 3],
    (heads, path): (usize, AttentionPath),
) -> Result<Tensor> {
    let dm = packed_dims(qkv, heads)?;
    let matrix_units = (path == AttentionPath::Matrix).then(|| on_matrix_units(qkv, dm));
    if let Some((gpu, units)) = matrix_units.flatten() {
        // In f16 for a product that reads it so (the q, k, v layer's, on the f16 kernels), as
        // a product stores an input's gradient (ops/matmul: `matmul_backward`).
        let grads = match crate::autograd::takes_f16_gradient(qkv) {
            true => DType::F16,
            false => DType::F32,
        };
        let all = matrix::backward_packed(gpu, (units, grads), dm, qkv, [out, lse, g])?;
        return Ok(packed_gradient(qkv, all, grads));
    }
    // The other kernels read f32 (a run whose precision changed since the forward).
    let (qkv, g) = (&qkv.to_f32()?, &g.to_f32()?);
    let all = if let Some((gpu, plan)) = tiled(qkv, dm) {
        // Where the forward ran on the matrix units and the precision changed since, these
        // kernels read its lse as their own: both keep the log-sum-exp of the scaled scores.
        tiled::backward_packed(gpu, plan, dm, qkv, [out, lse, g])?
    } else {
        // The kernel set changed since the forward pass (tests switch it): the row kernels
        // keep lse in the same layout.
        let [q, k, v] = unpack(qkv, dm.c)?;
        let grads = attention_backward([&q, &k, &v], [out, lse, g], heads)?;
        return Ok(Tensor::concat(&grads, 2)?.detach());
    };
    Ok(packed_gradient(qkv, all, DType::F32))
}

/// The gradient of a packed tensor from the kernels' buffer: dq, dk and dv side by side, in
/// `dtype`.
fn packed_gradient(qkv: &Tensor, all: PooledBuffer, dtype: DType) -> Tensor {
    Tensor::from_storage(qkv.shape().to_vec(), dtype, qkv.device(), Storage::Gpu(all))
}

impl Tensor {
    /// `attention_packed` through the T×T score matrix on any device, whatever the sizes:
    /// the path long sequences take on real GPUs, open to tests at any size.
    pub fn attention_via_scores(&self, heads: usize) -> Result<Tensor> {
        // Only the matrix units' kernels read q, k and v in f16.
        self.expect_dtype("attention", DType::F32)?;
        scores::forward(self, packed_dims(self, heads)?)
    }

    /// Causal self-attention over a packed [B, T, 3C] tensor that holds q, k and v side by side
    /// (as one linear layer makes them): the same as slicing the three out and calling
    /// `attention`, without the copies where the tiled GPU kernels run.
    pub fn attention_packed(&self, heads: usize) -> Result<Tensor> {
        self.attention_packed_on(heads, None)
    }

    /// `attention_packed` on the path `forced` (a timing's), else on the one chosen for its
    /// shape on its GPU (choice.rs).
    pub(crate) fn attention_packed_on(
        &self,
        heads: usize,
        forced: Option<AttentionPath>,
    ) -> Result<Tensor> {
        let dm = packed_dims(self, heads)?;
        let Some(gpu) = gpu_of(self.device()) else {
            return self.attention_unpacked(dm);
        };
        let path = choice::path(gpu, dm, forced)?;
        if self.dtype() == DType::F16 && path != AttentionPath::Matrix {
            return Err(Error::Invalid {
                op: "attention",
                why: format!("q, k and v in f16 are read on the matrix units only, not {path:?}"),
            });
        }
        let plan = (path == AttentionPath::Tiled).then(|| tiled::plan(gpu, dm));
        let units = (path == AttentionPath::Matrix).then(|| matrix::units(gpu, dm));
        let [out, lse] = match (path, plan.flatten(), units.flatten()) {
            (AttentionPath::Matrix, _, Some(units)) => matrix::forward(gpu, units, dm, self)?,
            (AttentionPath::Scores, _, _) => return scores::forward(self, dm),
            (AttentionPath::Tiled, Some(plan), _) => {
                tiled::forward(gpu, plan, (dm, true), [self, self, self])?
            }
            // choice::path gives the matrix units only where they take these sizes.
            (AttentionPath::Matrix | AttentionPath::Tiled | AttentionPath::Rows, _, _) => {
                return self.attention_unpacked(dm)
            }
        };
        let lse = Tensor::from_storage(
            vec![dm.rows()],
            DType::F32,
            self.device(),
            Storage::Gpu(lse),
        );
        let out = Storage::Gpu(out);
        let op = AttentionPacked {
            qkv: self.clone(),
            heads: dm.heads,
            lse,
            path,
        };
        Ok(Tensor::from_op(
            vec![dm.batch, dm.t, dm.c],
            DType::F32,
            self.device(),
            out,
            op,
        ))
    }

    /// Whether `attention_packed` over a [B, T, 3C] input of `shape` on `device` reads it in
    /// f16: on the matrix units, where the path chosen for its shape is theirs (choice.rs). The
    /// linear layer that makes q, k and v then stores them in f16 where its product can
    /// (`Tensor::linear_halves`), and the product that makes dO likewise
    /// (`reads_f16_gradient`): their stores write half the bytes, and the kernels fetch half
    /// and hold half the registers for a block fetched ahead.
    pub(crate) fn attention_reads_f16(device: &Device, shape: &[usize], heads: usize) -> bool {
        let (Some(gpu), &[batch, t, c3]) = (gpu_of(device), shape) else {
            return false;
        };
        let packed = Dims::new(batch, t, c3 / 3, heads).ok();
        let Some(dm) = packed.filter(|_| c3.is_multiple_of(3)) else {
            return false;
        };
        // The path is the matrix units' only where they take these sizes.
        choice::path(gpu, dm, None).is_ok_and(|p| p == AttentionPath::Matrix)
    }

    /// q, k and v sliced out and `attention` run on them: the row kernels, or the CPU.
    fn attention_unpacked(&self, dm: Dims) -> Result<Tensor> {
        let c = dm.c;
        self.slice(2, 0, c)?
            .attention(&self.slice(2, c, c)?, &self.slice(2, 2 * c, c)?, dm.heads)
    }
}
