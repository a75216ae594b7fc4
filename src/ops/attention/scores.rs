//! Causal attention through the T×T score matrix, for long sequences on real GPUs: the heads
//! gathered into [B·H, T, d], the scores and the products with them as batched matmuls (the
//! fastest kernel we have), a causal softmax in between. It keeps the probabilities for
//! backward, B·H·T² floats per call; past a few hundred positions the matmuls beat the tiled
//! kernels' thread-per-row products, which grow with T² too (docs/BENCHMARKS.md).

use super::Dims;
use crate::autograd::{no_grad, Backward};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::ops::copy::{copy_over, Copy};
use crate::ops::shape::strides;
use crate::ops::{gpu_of, launch1, matmul_causal, row_kernel, Causal};
use crate::tensor::{Host, Storage, Tensor};
use std::rc::Rc;

/// From this many positions the score matrix path is the faster on an H100 (measured: 1.3×
/// at 1024; at 64 the tiled kernels are twice as fast).
const SCORES_FROM: usize = 256;
/// The most bytes of probabilities one call may keep: past it the tiled kernels, which keep
/// none, run instead, so that a large batch or context costs time rather than memory.
const SCORES_MAX_BYTES: u64 = 256 << 20;

/// The bytes of probabilities attention over `batch` × `heads` sequences of `t` positions
/// keeps, if it goes through the scores on a real GPU; None if it takes the tiled kernels.
pub(crate) fn scores_bytes(batch: usize, heads: usize, t: usize) -> Option<u64> {
    let bytes = [batch, heads, t, t, 4]
        .iter()
        .fold(1u64, |n, &x| n.saturating_mul(x as u64));
    (t >= SCORES_FROM && bytes <= SCORES_MAX_BYTES).then_some(bytes)
}

/// Whether attention of these sizes goes through the score matrix: a real GPU, a long enough
/// sequence, and probabilities within the budget and one buffer binding.
pub(super) fn chosen(gpu: &Gpu, dm: Dims) -> bool {
    let limits = gpu.limits();
    let fits = |bytes: u64| {
        bytes <= limits.max_storage_buffer_binding_size && bytes <= limits.max_buffer_size
    };
    !gpu.is_cpu_emulated() && scores_bytes(dm.batch, dm.heads, dm.t).is_some_and(fits)
}

/// The heads' layout, [B, H, T, d], in which `heads_of` gathers them.
fn head_shape(dm: Dims) -> Vec<usize> {
    vec![dm.batch, dm.heads, dm.t, dm.d]
}

/// Where (batch, head, position, element) lies in a [B, T, width] tensor whose heads are
/// columns of d.
fn packed_strides(dm: Dims, width: usize) -> Vec<usize> {
    vec![dm.t * width, dm.d, width, 1]
}

/// The heads of column block `part` (0 q, 1 k, 2 v) of a [B, T, parts·C] tensor, gathered as
/// [B·H, T, d]: one strided copy.
fn heads_of(x: &Tensor, dm: Dims, part: usize) -> Result<Tensor> {
    let copy = Copy {
        src: x,
        src_off: part * dm.c,
        src_strides: packed_strides(dm, x.shape()[2]),
        shape: head_shape(dm),
        dst_off: 0,
        dst_strides: strides(&head_shape(dm)),
    };
    let storage = copy_over(x.device(), dm.batch * dm.t * dm.c, 0.0, &[copy])?;
    let shape = vec![dm.batch * dm.heads, dm.t, dm.d];
    Ok(Tensor::from_storage(shape, x.dtype(), x.device(), storage))
}

/// [B·H, T, d] tensors placed back side by side as the column blocks of one [B, T, n·C]:
/// the inverse of `heads_of` for each.
fn merged(parts: &[&Tensor], dm: Dims) -> Result<Storage> {
    let width = parts.len() * dm.c;
    let copies: Vec<Copy> = parts
        .iter()
        .enumerate()
        .map(|(i, x)| Copy {
            src: x,
            src_off: 0,
            src_strides: strides(&head_shape(dm)),
            shape: head_shape(dm),
            dst_off: i * dm.c,
            dst_strides: packed_strides(dm, width),
        })
        .collect();
    copy_over(parts[0].device(), dm.batch * dm.t * width, 0.0, &copies)
}

crate::kernel_params! {
    /// shaders/causal_softmax.wgsl and causal_softmax_backward.wgsl: rows of T scores and
    /// the softmax scale.
    struct CausalParams { rows: u32, cols: u32, scale: f32 }
}

/// A row kernel of the causal softmax over the [n, T, T] rows of `inputs[0]`, one output of
/// their shape.
fn causal_rows(
    gpu: &Rc<Gpu>,
    (family, source): (&'static str, &'static str),
    inputs: &[&Tensor],
    scale: f64,
) -> Result<Storage> {
    let (t, len) = (inputs[0].shape()[2], inputs[0].numel());
    let (kernel, groups) = row_kernel(gpu, family, source, "main", len / t);
    let params = CausalParams {
        rows: (len / t) as u32,
        cols: t as u32,
        scale: scale as f32,
    };
    launch1(gpu, &kernel, &params, inputs, len, groups)
}

/// softmax(scale · s) over each row of [n, T, T] scores, keys after the row's query masked.
fn causal_softmax(s: &Tensor, scale: f64) -> Result<Tensor> {
    let t = s.shape()[2];
    let storage = match gpu_of(s.device()) {
        None => {
            let v = s.host_f64("attention")?;
            let mut out = vec![0.0; v.len()];
            for (r, (x, y)) in v.chunks(t).zip(out.chunks_mut(t)).enumerate() {
                let keys = r % t + 1;
                let m = x[..keys].iter().fold(f64::MIN, |m, &x| m.max(x * scale));
                let sum: f64 = x[..keys].iter().map(|x| (x * scale - m).exp()).sum();
                for j in 0..keys {
                    y[j] = (x[j] * scale - m).exp() / sum;
                }
            }
            Storage::Host(Host::F(out))
        }
        Some(gpu) => {
            let source = include_str!("../../../shaders/causal_softmax.wgsl");
            causal_rows(gpu, ("causal_softmax", source), &[s], scale)?
        }
    };
    Ok(Tensor::from_storage(
        s.shape().to_vec(),
        s.dtype(),
        s.device(),
        storage,
    ))
}

/// The gradient of the scores from the probabilities `p` and their gradient `g`.
fn causal_softmax_backward(p: &Tensor, g: &Tensor, scale: f64) -> Result<Tensor> {
    let t = p.shape()[2];
    let storage = match gpu_of(p.device()) {
        None => {
            let (pv, gv) = (p.host_f64("attention")?, g.host_f64("attention")?);
            let mut dx = Vec::with_capacity(pv.len());
            for (y, g) in pv.chunks(t).zip(gv.chunks(t)) {
                let s: f64 = y.iter().zip(g).map(|(y, g)| y * g).sum();
                dx.extend(y.iter().zip(g).map(|(y, g)| scale * y * (g - s)));
            }
            Storage::Host(Host::F(dx))
        }
        Some(gpu) => {
            let source = include_str!("../../../shaders/causal_softmax_backward.wgsl");
            causal_rows(gpu, ("causal_softmax_backward", source), &[p, g], scale)?
        }
    };
    Ok(Tensor::from_storage(
        p.shape().to_vec(),
        p.dtype(),
        p.device(),
        storage,
    ))
}

/// Attention over a packed [B, T, 3C] tensor through the scores, as recorded for backward:
/// the heads as gathered and the probabilities.
struct AttentionScores {
    qkv: Tensor,
    dm: Dims,
    heads: [Tensor; 3],
    p: Tensor,
}

impl Backward for AttentionScores {
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.qkv]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let (dm, p, [q, k, v]) = (self.dm, &self.p, &self.heads);
        let d_out = heads_of(g, dm, 0)?;
        let dv = matmul_causal(p, &d_out, (true, false), Causal::AUpper)?;
        let dp = matmul_causal(&d_out, v, (false, true), Causal::OutputLower)?;
        let ds = causal_softmax_backward(p, &dp, dm.scale())?;
        drop(dp);
        let dq = matmul_causal(&ds, k, (false, false), Causal::ALower)?;
        let dk = matmul_causal(&ds, q, (true, false), Causal::AUpper)?;
        let storage = merged(&[&dq, &dk, &dv], dm)?;
        let shape = self.qkv.shape().to_vec();
        Ok(vec![Tensor::from_storage(
            shape,
            g.dtype(),
            g.device(),
            storage,
        )])
    }
}

/// Causal attention over packed q, k and v through the T×T scores (see the module's note).
pub(super) fn forward(qkv: &Tensor, dm: Dims) -> Result<Tensor> {
    let (heads, p, out) = no_grad(|| -> Result<_> {
        let heads = [
            heads_of(qkv, dm, 0)?,
            heads_of(qkv, dm, 1)?,
            heads_of(qkv, dm, 2)?,
        ];
        let [q, k, v] = &heads;
        let s = matmul_causal(q, k, (false, true), Causal::OutputLower)?;
        let p = causal_softmax(&s, dm.scale())?;
        let out = merged(
            &[&matmul_causal(&p, v, (false, false), Causal::ALower)?],
            dm,
        )?;
        Ok((heads, p, out))
    })?;
    let op = AttentionScores {
        qkv: qkv.clone(),
        dm,
        heads,
        p,
    };
    let shape = vec![dm.batch, dm.t, dm.c];
    Ok(Tensor::from_op(shape, qkv.dtype(), qkv.device(), out, op))
}
