//! Causal attention through the T×T score matrix, for long sequences on real GPUs: the scores
//! and the products with them as batched matmuls (the fastest kernel we have) that read and
//! write the heads in place (src/ops/matmul/layout.rs), a causal softmax in between. It keeps the probabilities for
//! backward, B·H·T² floats per call; past a few hundred positions the matmuls beat the tiled
//! kernels' thread-per-row products, which grow with T² too (docs/BENCHMARKS.md).

use super::Dims;
use crate::autograd::{no_grad, Backward, Inputs};
use crate::error::Result;
use crate::gpu::Gpu;
use crate::ops::{gpu_of, launch1, matmul_into, row_kernel, Causal, Layout, ProductDims, Views};
use crate::tensor::{gpu_output, numel, Device, Host, Storage, Tensor};
use std::rc::Rc;

/// From this many positions attention may keep its probabilities and go through the scores
/// (what the footprint counts, src/train/footprint.rs): the faster path on an H100 from there
/// (1.3× at 1024; at 64 the tiled kernels twice as fast), and the rule's where no timing chose
/// (choice.rs). Each GPU times its shapes on the paths open to them (src/tune/attention.rs).
const SCORES_FROM: usize = 256;
/// The most bytes of probabilities one call may keep: past it the tiled kernels, which keep
/// none, run instead, so that a large batch or context costs time rather than memory.
const SCORES_MAX_BYTES: u64 = 256 << 20;

/// The bytes of probabilities attention over `batch` × `heads` sequences of `t` positions
/// keeps where it goes through the scores on a real GPU; None where it never does.
pub(crate) fn scores_bytes(batch: usize, heads: usize, t: usize) -> Option<u64> {
    let bytes = [batch, heads, t, t, 4]
        .iter()
        .fold(1u64, |n, &x| n.saturating_mul(x as u64));
    (t >= SCORES_FROM && bytes <= SCORES_MAX_BYTES).then_some(bytes)
}

/// Whether attention of these sizes can go through the score matrix: a real GPU, a long enough
/// sequence, probabilities within the budget and one buffer binding, and the B·H products
/// within a dispatch.
pub(super) fn open(gpu: &Gpu, dm: Dims) -> bool {
    let limits = gpu.limits();
    let fits = |bytes: u64| {
        bytes <= limits.max_storage_buffer_binding_size && bytes <= limits.max_buffer_size
    };
    let products = (dm.batch * dm.heads) as u64;
    !gpu.is_cpu_emulated()
        && products <= u64::from(limits.max_compute_workgroups_per_dimension)
        && scores_bytes(dm.batch, dm.heads, dm.t).is_some_and(fits)
}

/// Where head h of column block `part` (0 q, 1 k, 2 v) of a [B, T, parts·C] tensor lies, for
/// the products to read or write it in place.
fn heads_in(dm: Dims, parts: usize, part: usize) -> Layout {
    Layout::heads_of(dm.t, parts * dm.c, dm.d, dm.heads, part)
}

/// The [B·H, T, T] scores (or probabilities, or their gradients), dense.
fn scores_layout(dm: Dims) -> Layout {
    Layout::dense(dm.t, dm.t * dm.t, dm.heads)
}

/// A buffer of `len` elements on `device` for products to fill.
fn fresh(device: &Device, len: usize) -> Result<Storage> {
    Ok(match gpu_of(device) {
        Some(gpu) => Storage::Gpu(gpu_output(gpu, len)?),
        None => Storage::Host(Host::F(vec![0.0; len])),
    })
}

/// One of attention's B·H products per call, T rows each, of `k` deep into `n` columns: op(A)
/// and op(B) read where their layouts say, C written into `target` where its layout says.
fn product(
    dm: Dims,
    (target, c): (&mut Storage, Layout),
    [(a, la), (b, lb)]: [(&Tensor, Layout); 2],
    (k, n): (usize, usize),
    (transposes, causal): ((bool, bool), Causal),
) -> Result<()> {
    let d = ProductDims {
        m: dm.t,
        n,
        k,
        batches: dm.batch * dm.heads,
    };
    let views = Views {
        heads: dm.heads,
        a: la,
        b: lb,
        c,
        row_sums: None,
    };
    matmul_into(target, [a, b], (d, views), transposes, causal)
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
/// the probabilities.
struct AttentionScores {
    qkv: Tensor,
    dm: Dims,
    p: Tensor,
}

impl Backward for AttentionScores {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.qkv]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let (dm, p, qkv) = (self.dm, &self.p, &self.qkv);
        let (t, d) = (dm.t, dm.d);
        let [q, k, v] = [0, 1, 2].map(|part| (qkv, heads_in(dm, 3, part)));
        let (probs, d_out) = ((p, scores_layout(dm)), (g, heads_in(dm, 1, 0)));
        let mut all = fresh(g.device(), qkv.numel())?;
        let mut dp = fresh(g.device(), p.numel())?;
        let (lower, upper, t_a) = (Causal::ALower, Causal::AUpper, (true, false));
        let dv = heads_in(dm, 3, 2);
        product(dm, (&mut all, dv), [probs, d_out], (t, d), (t_a, upper))?;
        let scores = (&mut dp, scores_layout(dm));
        let output_lower = ((false, true), Causal::OutputLower);
        product(dm, scores, [d_out, v], (d, t), output_lower)?;
        let dp = Tensor::from_storage(p.shape().to_vec(), p.dtype(), p.device(), dp);
        let ds = causal_softmax_backward(p, &dp, dm.scale())?;
        drop(dp);
        let ds = (&ds, scores_layout(dm));
        let (dq, dk) = (heads_in(dm, 3, 0), heads_in(dm, 3, 1));
        product(dm, (&mut all, dq), [ds, k], (t, d), ((false, false), lower))?;
        product(dm, (&mut all, dk), [ds, q], (t, d), (t_a, upper))?;
        let shape = qkv.shape().to_vec();
        Ok(vec![Tensor::from_storage(
            shape,
            g.dtype(),
            g.device(),
            all,
        )])
    }
}

/// Causal attention over packed q, k and v through the T×T scores (see the module's note).
pub(super) fn forward(qkv: &Tensor, dm: Dims) -> Result<Tensor> {
    let (p, out) = no_grad(|| -> Result<_> {
        let (t, d, device) = (dm.t, dm.d, qkv.device());
        let [q, k, v] = [0, 1, 2].map(|part| (qkv, heads_in(dm, 3, part)));
        let scores_shape = vec![dm.batch * dm.heads, t, t];
        let mut s = fresh(device, numel(&scores_shape))?;
        let output_lower = ((false, true), Causal::OutputLower);
        product(
            dm,
            (&mut s, scores_layout(dm)),
            [q, k],
            (d, t),
            output_lower,
        )?;
        let s = Tensor::from_storage(scores_shape, qkv.dtype(), device, s);
        let p = causal_softmax(&s, dm.scale())?;
        drop(s);
        let mut out = fresh(device, dm.batch * t * dm.c)?;
        let probs = (&p, scores_layout(dm));
        let a_lower = ((false, false), Causal::ALower);
        product(
            dm,
            (&mut out, heads_in(dm, 1, 0)),
            [probs, v],
            (t, d),
            a_lower,
        )?;
        Ok((p, out))
    })?;
    let op = AttentionScores {
        qkv: qkv.clone(),
        dm,
        p,
    };
    let shape = vec![dm.batch, dm.t, dm.c];
    Ok(Tensor::from_op(shape, qkv.dtype(), qkv.device(), out, op))
}
