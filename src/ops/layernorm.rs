//! LayerNorm over the last axis with weight and bias.

use super::reduce::BUSY_GROUPS;
use super::{gpu_of, launch, launch1, row_kernel, RowsParams, ROWS_PER_GROUP};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, PooledBuffer, ROW_WORKGROUP};
use crate::tensor::{DType, Host, Storage, Tensor};
use std::rc::Rc;

fn cpu_stats(x: &[f64], cols: usize, eps: f64) -> Vec<f64> {
    let mut stats = Vec::new();
    for row in x.chunks(cols) {
        let mean = row.iter().sum::<f64>() / cols as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / cols as f64;
        stats.extend([mean, 1.0 / (var + eps).sqrt()]);
    }
    stats
}

/// LayerNorm over the last axis, as recorded for backward, with each row's mean and inverse
/// standard deviation.
struct LayerNormOp {
    x: Tensor,
    weight: Tensor,
    bias: Tensor,
    stats: Tensor,
}

impl Backward for LayerNormOp {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x, &self.weight, &self.bias]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        layernorm_backward(&self.x, &self.weight, &self.stats, g)
    }
    /// On real GPUs the fused kernel adds x's gradient from the residual connection into dx.
    fn backward_adding(
        &self,
        _out: &Tensor,
        g: &Tensor,
        so_far: &Tensor,
    ) -> Result<Option<Vec<Tensor>>> {
        let x = &self.x;
        let Some(gpu) = gpu_of(x.device()) else {
            return Ok(None);
        };
        if so_far.shape() != x.shape() || so_far.dtype() != DType::F32 {
            return Ok(None);
        }
        let cols = self.weight.numel();
        let inputs = [x, &self.weight, &self.stats, g];
        let fused = backward_fused(gpu, inputs, (x.numel() / cols, cols), Some(so_far))?;
        Ok(fused.map(|(dx, dw, db)| {
            let dx = Tensor::from_storage(x.shape().to_vec(), DType::F32, x.device(), dx);
            vec![dx, dw, db]
        }))
    }
}

/// Gradients of x, weight and bias.
fn layernorm_backward(
    x: &Tensor,
    weight: &Tensor,
    stats: &Tensor,
    g: &Tensor,
) -> Result<Vec<Tensor>> {
    let cols = weight.numel();
    let sizes = (x.numel() / cols, cols);
    let inputs = [x, weight, stats, g];
    let (dx, dw, db) = match gpu_of(x.device()) {
        None => {
            let [dx, dw, db] = cpu_backward(inputs, sizes)?;
            let param = |v| {
                let shape = weight.shape().to_vec();
                Tensor::from_storage(shape, DType::F32, x.device(), Storage::Host(Host::F(v)))
            };
            (Storage::Host(Host::F(dx)), param(dw), param(db))
        }
        Some(gpu) => match backward_fused(gpu, inputs, sizes, None)? {
            Some(grads) => grads,
            None => backward_rows(gpu, inputs, sizes)?,
        },
    };
    let make = |s, shape: &[usize]| Tensor::from_storage(shape.to_vec(), DType::F32, x.device(), s);
    Ok(vec![make(dx, x.shape()), dw, db])
}

/// dx, dw and db in f64 on the CPU.
fn cpu_backward(
    [x, weight, stats, g]: [&Tensor; 4],
    (rows, cols): (usize, usize),
) -> Result<[Vec<f64>; 3]> {
    let name = "layernorm backward";
    let (xv, w, st, gv) = (
        x.host_f64(name)?,
        weight.host_f64(name)?,
        stats.host_f64(name)?,
        g.host_f64(name)?,
    );
    let (mut dx, mut dw, mut db) = (vec![0.0; xv.len()], vec![0.0; cols], vec![0.0; cols]);
    for r in 0..rows {
        let (mean, rstd) = (st[2 * r], st[2 * r + 1]);
        let xh: Vec<f64> = (0..cols)
            .map(|j| (xv[r * cols + j] - mean) * rstd)
            .collect();
        let gw: Vec<f64> = (0..cols).map(|j| gv[r * cols + j] * w[j]).collect();
        let m1 = gw.iter().sum::<f64>() / cols as f64;
        let m2 = gw.iter().zip(&xh).map(|(a, b)| a * b).sum::<f64>() / cols as f64;
        for j in 0..cols {
            dx[r * cols + j] = rstd * (gw[j] - m1 - xh[j] * m2);
            dw[j] += gv[r * cols + j] * xh[j];
            db[j] += gv[r * cols + j];
        }
    }
    Ok([dx, dw, db])
}

/// dx on the row kernel, dw and db from other ops (emulated GPUs, and rows the fused kernel
/// does not take).
fn backward_rows(
    gpu: &Rc<Gpu>,
    [x, weight, stats, g]: [&Tensor; 4],
    (rows, cols): (usize, usize),
) -> Result<(Storage, Tensor, Tensor)> {
    let params = RowsParams::new(rows, cols);
    let (k, groups) = row_kernel(
        gpu,
        "layernorm_backward",
        include_str!("../../shaders/layernorm_backward.wgsl"),
        "main",
        rows,
    );
    let dx = launch1(gpu, &k, &params, &[x, weight, stats, g], x.numel(), groups)?;
    let (dw, db) = params_backward_composed(x, stats, g, (rows, cols))?;
    Ok((dx, dw, db))
}

crate::kernel_params! {
    /// shaders/layernorm.wgsl.
    struct LayerNormParams { rows: u32, cols: u32, eps: f32 }
}

crate::kernel_params! {
    /// shaders/layernorm_backward_fused.wgsl: the rows taken `chunk` at a time.
    struct ChunkedRowsParams { rows: u32, cols: u32, chunk: u32 }
}

crate::kernel_params! {
    /// shaders/layernorm_params_finish.wgsl: `chunks` partial sums per column.
    struct FinishParams { cols: u32, chunks: u32 }
}

/// Columns per workgroup of shaders/layernorm_params_finish.wgsl.
const FINISH_COLS: usize = 16;

/// How shaders/layernorm_backward_fused.wgsl takes `rows` rows of `cols` columns: row slots
/// per workgroup (as many as fit their column sums in workgroup memory), columns per thread,
/// and the rows cut into chunks, one per workgroup.
struct FusedLayout {
    per_group: usize,
    cols_per_lane: usize,
    chunk: usize,
    chunks: usize,
}

/// The fused backward's layout on `gpu`; None where it does not apply (emulated GPUs, no rows,
/// rows too wide for the sums in workgroup memory, more chunks than a dispatch may have).
fn fused_layout(gpu: &Gpu, rows: usize, cols: usize) -> Option<FusedLayout> {
    let limits = gpu.limits();
    let lanes = ROW_WORKGROUP as usize;
    let cols_per_lane = cols.div_ceil(lanes);
    // Each row slot's two sums per column, and row_sum2's vec2 per thread.
    let workgroup_bytes =
        |per_group: usize| per_group * (2 * lanes * cols_per_lane * 4 + lanes * 8);
    let max_bytes = limits.max_compute_workgroup_storage_size as usize;
    let per_group = [ROWS_PER_GROUP as usize, 2, 1]
        .into_iter()
        .find(|&g| workgroup_bytes(g) <= max_bytes)?;
    let chunks = rows.min(BUSY_GROUPS);
    if gpu.is_cpu_emulated()
        || rows == 0
        || chunks > limits.max_compute_workgroups_per_dimension as usize
    {
        return None;
    }
    let chunk = rows.div_ceil(chunks);
    Some(FusedLayout {
        per_group,
        cols_per_lane,
        chunk,
        chunks: rows.div_ceil(chunk),
    })
}

/// dx, dw and db on real GPUs in two dispatches (shaders/layernorm_backward_fused.wgsl, then
/// shaders/layernorm_params_finish.wgsl): dx (plus `so_far`, x's gradient from its other
/// uses, if given) and partial sums of dw and db over chunks of rows, then their totals. None
/// where `fused_layout` says it does not apply.
fn backward_fused(
    gpu: &Rc<Gpu>,
    [x, weight, stats, g]: [&Tensor; 4],
    (rows, cols): (usize, usize),
    so_far: Option<&Tensor>,
) -> Result<Option<(Storage, Tensor, Tensor)>> {
    let Some(FusedLayout {
        per_group,
        cols_per_lane,
        chunk,
        chunks,
    }) = fused_layout(gpu, rows, cols)
    else {
        return Ok(None);
    };
    let kernel = Kernel::new(
        "layernorm_backward_fused",
        include_str!("../../shaders/layernorm_backward_fused.wgsl"),
        "main",
    )
    .slot("ROWWISE", "shared")
    .slot("ROW_GROUP", per_group)
    .slot("COLS_PER_LANE", cols_per_lane)
    .constant("ADDS", so_far.is_some());
    let params = ChunkedRowsParams {
        rows: rows as u32,
        cols: cols as u32,
        chunk: chunk as u32,
    };
    let outputs = [x.numel(), 2 * chunks * cols];
    // Without a gradient to add, g is bound in its place and not read.
    let inputs = [x, weight, stats, g, so_far.unwrap_or(g)];
    let [dx, partials] = launch(
        gpu,
        &kernel,
        &params,
        &inputs,
        outputs,
        [chunks as u32, 1, 1],
    )?;
    let partials = Storage::Gpu(partials);
    let partials = Tensor::from_storage(vec![2 * chunks * cols], DType::F32, x.device(), partials);
    let dx = Storage::Gpu(dx);
    let finish = Kernel::new(
        "layernorm_params_finish",
        include_str!("../../shaders/layernorm_params_finish.wgsl"),
        "main",
    );
    let params = FinishParams {
        cols: cols as u32,
        chunks: chunks as u32,
    };
    let groups = [cols.div_ceil(FINISH_COLS) as u32, 2, 1];
    let [dw, db] = launch(gpu, &finish, &params, &[&partials], [cols, cols], groups)?;
    let grad = |b| Tensor::from_storage(vec![cols], DType::F32, x.device(), Storage::Gpu(b));
    Ok(Some((dx, grad(dw), grad(db))))
}

/// dw and db from tensor ops (emulated GPUs, very wide rows): column sums of g xh and of g.
fn params_backward_composed(
    x: &Tensor,
    stats: &Tensor,
    g: &Tensor,
    (rows, cols): (usize, usize),
) -> Result<(Tensor, Tensor)> {
    let (x2, g2) = (x.reshape(&[rows, cols])?, g.reshape(&[rows, cols])?);
    let xhat = x2
        .sub(&stats.slice(1, 0, 1)?)?
        .mul(&stats.slice(1, 1, 1)?)?;
    Ok((g2.mul(&xhat)?.sum(0, false)?, g2.sum(0, false)?))
}

/// The output and each row's mean and inverse standard deviation, in f64 on the CPU.
fn cpu_forward([x, w, b]: [&Tensor; 3], cols: usize, eps: f32) -> Result<[Vec<f64>; 2]> {
    let name = "layernorm";
    let (x, w, b) = (x.host_f64(name)?, w.host_f64(name)?, b.host_f64(name)?);
    let stats = cpu_stats(&x, cols, eps as f64);
    let y = (0..x.len())
        .map(|i| {
            let (r, j) = (i / cols, i % cols);
            (x[i] - stats[2 * r]) * stats[2 * r + 1] * w[j] + b[j]
        })
        .collect();
    Ok([y, stats])
}

/// The output (in `out`'s dtype: f32, or f16 in rows of a multiple of 8) and the row
/// statistics on the row kernel (shaders/layernorm.wgsl).
fn gpu_forward(
    gpu: &Rc<Gpu>,
    inputs: [&Tensor; 3],
    (rows, cols): (usize, usize),
    (eps, out): (f32, DType),
) -> Result<[PooledBuffer; 2]> {
    let (k, groups) = row_kernel(
        gpu,
        "layernorm",
        include_str!("../../shaders/layernorm.wgsl"),
        "main",
        rows,
    );
    let params = LayerNormParams {
        rows: rows as u32,
        cols: cols as u32,
        eps,
    };
    let k = match out {
        DType::F16 => k.slot("Y", "y_f16"),
        _ => k.slot("Y", "y_f32"),
    };
    let words = out.bytes(inputs[0].numel()) as usize / 4;
    launch(gpu, &k, &params, &inputs, [words, 2 * rows], groups)
}

impl Tensor {
    /// LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * weight + bias, with the
    /// biased variance as in PyTorch.
    pub fn layernorm(&self, weight: &Tensor, bias: &Tensor, eps: f32) -> Result<Tensor> {
        self.layernorm_as(weight, bias, (eps, DType::F32))
    }

    /// `layernorm` as the input of a linear layer's product into `n` columns: in f16 where
    /// that product reads it so (`linear_reads_f16`: an f16 run on the f16 kernels), written
    /// so by the LayerNorm's kernel, where its f32 output would be copied to f16 for the
    /// product and both held; else in f32. The gradient reaches it in f32 as ever.
    pub fn layernorm_into_linear(
        &self,
        (weight, bias, eps): (&Tensor, &Tensor, f32),
        n: usize,
    ) -> Result<Tensor> {
        let out = match super::matmul::linear_reads_f16(self, n, false)? {
            true => DType::F16,
            false => DType::F32,
        };
        self.layernorm_as(weight, bias, (eps, out))
    }

    /// `layernorm` with its output in `out`'s dtype (f16 only where `linear_reads_f16`).
    fn layernorm_as(
        &self,
        weight: &Tensor,
        bias: &Tensor,
        (eps, out): (f32, DType),
    ) -> Result<Tensor> {
        let name = "layernorm";
        for t in [self, weight, bias] {
            t.expect_dtype(name, DType::F32)?;
            self.same_device(name, t)?;
        }
        let cols = *self.shape().last().ok_or(Error::Invalid {
            op: name,
            why: "needs at least one dimension".into(),
        })?;
        if weight.shape() != [cols] || bias.shape() != [cols] {
            return Err(Error::Shape {
                op: name,
                a: self.shape().to_vec(),
                b: weight.shape().to_vec(),
                why: "weight and bias must match the last axis".into(),
            });
        }
        if cols == 0 {
            return Err(Error::Invalid {
                op: name,
                why: "needs a last axis of at least one element".into(),
            });
        }
        let rows = self.numel() / cols;
        // The f16 kernel writes pairs into whole packets (`linear_reads_f16` checked them).
        debug_assert!(out == DType::F32 || (gpu_of(self.device()).is_some() && cols % 8 == 0));
        let (y, stats) = match gpu_of(self.device()) {
            None => {
                let [y, stats] = cpu_forward([self, weight, bias], cols, eps)?;
                (Storage::Host(Host::F(y)), Storage::Host(Host::F(stats)))
            }
            Some(gpu) => {
                let inputs = [self, weight, bias];
                let [y, stats] = gpu_forward(gpu, inputs, (rows, cols), (eps, out))?;
                (Storage::Gpu(y), Storage::Gpu(stats))
            }
        };
        let stats = Tensor::from_storage(vec![rows, 2], DType::F32, self.device(), stats);
        let op = LayerNormOp {
            x: self.clone(),
            weight: weight.clone(),
            bias: bias.clone(),
            stats,
        };
        Ok(Tensor::from_op(
            self.shape().to_vec(),
            out,
            self.device(),
            y,
            op,
        ))
    }
}
