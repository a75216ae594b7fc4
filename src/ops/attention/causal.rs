//! The attention op over separate q, k and v, with the row kernels (emulated GPUs, heads the
//! tiled kernels do not take), the CPU reference, and the backward of both layouts.

use super::{tiled, Dims};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::PooledBuffer;
use crate::gpu::{Gpu, Kernel, ROW_WORKGROUP};
use crate::ops::{gpu_of, launch, row_kernel_mode, RowMode};
use crate::tensor::{DType, Host, Storage, Tensor};
use std::rc::Rc;

fn dims(q: &Tensor, k: &Tensor, v: &Tensor, heads: usize) -> Result<Dims> {
    let name = "attention";
    for t in [q, k, v] {
        t.expect_dtype(name, DType::F32)?;
        q.same_device(name, t)?;
        if t.shape() != q.shape() || t.rank() != 3 {
            return Err(Error::Shape {
                op: name,
                a: q.shape().to_vec(),
                b: t.shape().to_vec(),
                why: "q, k and v must all be [batch, time, channels]".into(),
            });
        }
    }
    Dims::new(q.shape()[0], q.shape()[1], q.shape()[2], heads)
}

/// Kernels keep a row of T scores (two in backward) in workgroup memory beside the row
/// reduction's float per lane; sized by powers of two so that a growing context reuses
/// pipelines.
fn score_slots(gpu: &Gpu, t: usize) -> Result<usize> {
    let lanes = ROW_WORKGROUP as usize;
    let slots = t.next_power_of_two().max(lanes);
    let need = ((2 * slots + lanes) * 4) as u64;
    let max = gpu.limits().max_compute_workgroup_storage_size as u64;
    if need > max {
        return Err(Error::TooLarge {
            limit: "maxComputeWorkgroupStorageSize",
            requested: need,
            max,
        });
    }
    Ok(slots)
}

/// A row kernel whose row keeps its scores in workgroup memory (`score_slots`): one row to a
/// workgroup on real GPUs.
fn scores_row_kernel(
    gpu: &Gpu,
    family: &'static str,
    source: &'static str,
    rows: usize,
) -> (Kernel, [u32; 3]) {
    let mode = match RowMode::of(gpu) {
        RowMode::Shared(_) => RowMode::Shared(1),
        serial => serial,
    };
    row_kernel_mode(mode, gpu, family, source, "main", rows)
}

/// Softmax probabilities P[b, h, i, j] (0 for j > i), in f64 on the CPU.
fn cpu_probs(q: &[f64], k: &[f64], dm: Dims) -> Vec<f64> {
    let t = dm.t;
    let mut probs = vec![0.0; dm.rows() * t];
    for b in 0..dm.batch {
        for h in 0..dm.heads {
            for i in 0..t {
                let row = &mut probs[((b * dm.heads + h) * t + i) * t..][..t];
                for j in 0..=i {
                    row[j] = (0..dm.d)
                        .map(|e| q[dm.at(b, i, h) + e] * k[dm.at(b, j, h) + e])
                        .sum::<f64>()
                        * dm.scale();
                }
                let m = row[..=i].iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = row[..=i].iter().map(|x| (x - m).exp()).sum();
                row[..=i].iter_mut().for_each(|x| *x = (*x - m).exp() / s);
            }
        }
    }
    probs
}

/// Attention over separate q, k and v, as recorded for backward, with the log-sum-exp of
/// each row of scores.
struct AttentionOp {
    q: Tensor,
    k: Tensor,
    v: Tensor,
    heads: usize,
    lse: Tensor,
}

impl Backward for AttentionOp {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.q, &self.k, &self.v]
    }
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let qkv = [&self.q, &self.k, &self.v];
        Ok(attention_backward(qkv, [out, &self.lse, g], self.heads)?.to_vec())
    }
}

/// Gradients of q, k and v, given the forward's output, its log-sum-exp per row and the
/// output's gradient.
pub(super) fn attention_backward(
    [q, k, v]: [&Tensor; 3],
    [out, lse, g]: [&Tensor; 3],
    heads: usize,
) -> Result<[Tensor; 3]> {
    let dm = dims(q, k, v, heads)?;
    let grads = match gpu_of(q.device()) {
        None => cpu_backward(dm, [q, k, v], g)?.map(|d| Storage::Host(Host::F(d))),
        Some(gpu) => match tiled::plan(gpu, dm) {
            Some(plan) => tiled::backward_split(gpu, plan, dm, [q, k, v], [out, lse, g])?,
            None => row_backward(gpu, dm, [q, k, v], [out, lse, g])?,
        }
        .map(Storage::Gpu),
    };
    Ok(grads.map(|s| Tensor::from_storage(q.shape().to_vec(), DType::F32, q.device(), s)))
}

/// dq, dk and dv in f64 on the CPU, from probabilities recomputed from q and k.
fn cpu_backward(dm: Dims, [q, k, v]: [&Tensor; 3], g: &Tensor) -> Result<[Vec<f64>; 3]> {
    let name = "attention backward";
    let (qv, kv, vv, gv) = (
        q.host_f64(name)?,
        k.host_f64(name)?,
        v.host_f64(name)?,
        g.host_f64(name)?,
    );
    let probs = cpu_probs(&qv, &kv, dm);
    let [mut dq, mut dk, mut dv] = [(); 3].map(|_| vec![0.0; q.numel()]);
    for b in 0..dm.batch {
        for h in 0..dm.heads {
            for i in 0..dm.t {
                let prow = &probs[((b * dm.heads + h) * dm.t + i) * dm.t..][..dm.t];
                let qi = dm.at(b, i, h);
                let dp: Vec<f64> = (0..=i)
                    .map(|j| (0..dm.d).map(|e| gv[qi + e] * vv[dm.at(b, j, h) + e]).sum())
                    .collect();
                let dot: f64 = (0..=i).map(|j| prow[j] * dp[j]).sum();
                for j in 0..=i {
                    let kj = dm.at(b, j, h);
                    let ds = prow[j] * (dp[j] - dot) * dm.scale();
                    for e in 0..dm.d {
                        dv[kj + e] += prow[j] * gv[qi + e];
                        dq[qi + e] += ds * kv[kj + e];
                        dk[kj + e] += ds * qv[qi + e];
                    }
                }
            }
        }
    }
    Ok([dq, dk, dv])
}

/// dq, dk and dv on the row kernels: the query side first (with each row's dot of output and
/// gradient, `delta`), then the key side.
fn row_backward(
    gpu: &Rc<Gpu>,
    dm: Dims,
    [q, k, v]: [&Tensor; 3],
    [out, lse, g]: [&Tensor; 3],
) -> Result<[PooledBuffer; 3]> {
    let slots = score_slots(gpu, dm.t)?;
    let (kdq, groups) = scores_row_kernel(
        gpu,
        "attention_dq",
        include_str!("../../../shaders/attention_dq.wgsl"),
        dm.rows(),
    );
    let kdq = kdq.slot("T", slots);
    let inputs = [q, k, v, out, g, lse];
    let [dq, delta] = launch(
        gpu,
        &kdq,
        &dm.params(),
        &inputs,
        [q.numel(), dm.rows()],
        groups,
    )?;
    let delta = Tensor::from_storage(vec![dm.rows()], DType::F32, q.device(), Storage::Gpu(delta));
    let (kdkv, groups) = scores_row_kernel(
        gpu,
        "attention_dkv",
        include_str!("../../../shaders/attention_dkv.wgsl"),
        dm.rows(),
    );
    let kdkv = kdkv.slot("T", slots);
    let inputs = [q, k, v, g, lse, &delta];
    let [dk, dv] = launch(
        gpu,
        &kdkv,
        &dm.params(),
        &inputs,
        [q.numel(), q.numel()],
        groups,
    )?;
    Ok([dq, dk, dv])
}

/// Forward on the row kernels (emulated GPUs, and heads the tiled kernels do not take): the
/// output and the log-sum-exp per row.
fn row_attention(gpu: &Rc<Gpu>, dm: Dims, qkv: [&Tensor; 3]) -> Result<[PooledBuffer; 2]> {
    let slots = score_slots(gpu, dm.t)?;
    let (kernel, groups) = scores_row_kernel(
        gpu,
        "attention",
        include_str!("../../../shaders/attention.wgsl"),
        dm.rows(),
    );
    let kernel = kernel.slot("T", slots);
    launch(
        gpu,
        &kernel,
        &dm.params(),
        &qkv,
        [qkv[0].numel(), dm.rows()],
        groups,
    )
}

impl Tensor {
    /// Causal self-attention of queries `self`, keys `k` and values `v`, all [B, T, C], split
    /// into `heads` heads of C / heads channels: softmax(q kᵀ / sqrt(d)) v with future
    /// positions masked. Returns [B, T, C] with the heads side by side.
    pub fn attention(&self, k: &Tensor, v: &Tensor, heads: usize) -> Result<Tensor> {
        let dm = dims(self, k, v, heads)?;
        let (out, lse) = match gpu_of(self.device()) {
            None => {
                let (qv, kv, vv) = (
                    self.host_f64("attention")?,
                    k.host_f64("attention")?,
                    v.host_f64("attention")?,
                );
                let probs = cpu_probs(&qv, &kv, dm);
                let mut out = vec![0.0; self.numel()];
                for b in 0..dm.batch {
                    for h in 0..dm.heads {
                        for i in 0..dm.t {
                            let prow = &probs[((b * dm.heads + h) * dm.t + i) * dm.t..][..dm.t];
                            for j in 0..=i {
                                for e in 0..dm.d {
                                    out[dm.at(b, i, h) + e] += prow[j] * vv[dm.at(b, j, h) + e];
                                }
                            }
                        }
                    }
                }
                // The CPU backward recomputes probabilities, so it keeps no lse.
                (
                    Storage::Host(Host::F(out)),
                    Storage::Host(Host::F(vec![0.0; dm.rows()])),
                )
            }
            Some(gpu) => {
                let [out, lse] = match tiled::plan(gpu, dm) {
                    Some(plan) => tiled::forward(gpu, plan, (dm, false), [self, k, v])?,
                    None => row_attention(gpu, dm, [self, k, v])?,
                };
                (Storage::Gpu(out), Storage::Gpu(lse))
            }
        };
        let lse = Tensor::from_storage(vec![dm.rows()], DType::F32, self.device(), lse);
        let op = AttentionOp {
            q: self.clone(),
            k: k.clone(),
            v: v.clone(),
            heads,
            lse,
        };
        Ok(Tensor::from_op(
            self.shape().to_vec(),
            DType::F32,
            self.device(),
            out,
            op,
        ))
    }
}
