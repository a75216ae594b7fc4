//! Softmax and log-softmax over the last axis, and the fused softmax cross-entropy with
//! integer targets.

use super::{gpu_of, launch1, row_kernel, RowsParams};
use crate::autograd::{no_grad, Backward};
use crate::error::{Error, Result};
use crate::tensor::{DType, Host, Storage, Tensor};

/// (rows, cols) of a tensor seen as rows of its last axis.
fn rows_cols(x: &Tensor, op: &'static str) -> Result<(usize, usize)> {
    match x.shape().last() {
        Some(&cols) if cols > 0 => Ok((x.numel() / cols, cols)),
        _ => Err(Error::Invalid {
            op,
            why: format!(
                "needs a last axis of at least one element, got shape {:?}",
                x.shape()
            ),
        }),
    }
}

fn cpu_softmax(v: &[f64], cols: usize, log: bool) -> Vec<f64> {
    let mut out = Vec::with_capacity(v.len());
    for row in v.chunks(cols) {
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = row.iter().map(|x| (x - m).exp()).sum();
        out.extend(row.iter().map(|x| {
            if log {
                x - m - s.ln()
            } else {
                (x - m).exp() / s
            }
        }));
    }
    out
}

fn softmax_any(x: &Tensor, log: bool) -> Result<Tensor> {
    let name = if log { "log_softmax" } else { "softmax" };
    x.expect_dtype(name, DType::F32)?;
    let (rows, cols) = rows_cols(x, name)?;
    let storage = match gpu_of(x.device()) {
        None => Storage::Host(Host::F(cpu_softmax(&x.host_f64(name)?, cols, log))),
        Some(gpu) => {
            let out = if log { "z - log_s" } else { "exp(z) / s" };
            let (kernel, groups) = row_kernel(
                gpu,
                "softmax",
                include_str!("../../shaders/softmax.wgsl"),
                "main",
                rows,
            );
            let kernel = kernel.slot("OUT", out);
            let params = RowsParams::new(rows, cols);
            launch1(gpu, &kernel, &params, &[x], x.numel(), groups)?
        }
    };
    let op = SoftmaxOp { x: x.clone(), log };
    Ok(Tensor::from_op(
        x.shape().to_vec(),
        DType::F32,
        x.device(),
        storage,
        op,
    ))
}

/// Softmax or log-softmax over rows, as recorded for backward (the rule needs only the output).
struct SoftmaxOp {
    x: Tensor,
    log: bool,
}

impl Backward for SoftmaxOp {
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.x]
    }
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![softmax_backward(out, g, self.log)?])
    }
}

/// dx of softmax (or log-softmax) from its output `y` and gradient `g`.
fn softmax_backward(y: &Tensor, g: &Tensor, log: bool) -> Result<Tensor> {
    let (rows, cols) = rows_cols(y, "softmax backward")?;
    let storage = match gpu_of(y.device()) {
        None => {
            let (yv, gv) = (
                y.host_f64("softmax backward")?,
                g.host_f64("softmax backward")?,
            );
            let mut dx = Vec::with_capacity(yv.len());
            for (yr, gr) in yv.chunks(cols).zip(gv.chunks(cols)) {
                if log {
                    let s: f64 = gr.iter().sum();
                    dx.extend(yr.iter().zip(gr).map(|(y, g)| g - y.exp() * s));
                } else {
                    let s: f64 = yr.iter().zip(gr).map(|(y, g)| y * g).sum();
                    dx.extend(yr.iter().zip(gr).map(|(y, g)| y * (g - s)));
                }
            }
            Storage::Host(Host::F(dx))
        }
        Some(gpu) => {
            let (kernel, groups) = row_kernel(
                gpu,
                "softmax_backward",
                include_str!("../../shaders/softmax_backward.wgsl"),
                "main",
                rows,
            );
            let kernel = kernel.constant("LOG", log);
            let params = RowsParams::new(rows, cols);
            launch1(gpu, &kernel, &params, &[y, g], y.numel(), groups)?
        }
    };
    Ok(Tensor::from_storage(
        y.shape().to_vec(),
        DType::F32,
        y.device(),
        storage,
    ))
}

crate::kernel_params! {
    /// The cross-entropy kernels': `rows` rows of `cols` logits, each row's loss and gradient
    /// times `scale` (1 / rows for the mean, so that the mean is one sum with no pass of its
    /// own, forward or backward).
    struct LossParams { rows: u32, cols: u32, scale: f32 }
}

/// Per-row loss scale · (logsumexp(x) - x[target]) for logits [rows, classes] and u32 targets
/// [rows].
fn cross_entropy_rows(logits: &Tensor, targets: &Tensor, scale: f32) -> Result<Tensor> {
    let name = "cross_entropy";
    logits.expect_dtype(name, DType::F32)?;
    targets.expect_dtype(name, DType::U32)?;
    logits.same_device(name, targets)?;
    if logits.rank() != 2 || targets.shape() != [logits.shape()[0]] {
        return Err(Error::Shape {
            op: name,
            a: logits.shape().to_vec(),
            b: targets.shape().to_vec(),
            why: "logits must be [rows, classes] and targets [rows]".into(),
        });
    }
    let (rows, cols) = rows_cols(logits, name)?;
    let storage = match gpu_of(logits.device()) {
        None => {
            let t = targets.host_u32(name)?;
            if let Some(bad) = t.iter().find(|&&t| t as usize >= cols) {
                return Err(Error::Invalid {
                    op: name,
                    why: format!("target {bad} is not below the {cols} classes"),
                });
            }
            let logp = cpu_softmax(&logits.host_f64(name)?, cols, true);
            let scale = scale as f64;
            Storage::Host(Host::F(
                (0..rows)
                    .map(|r| -scale * logp[r * cols + t[r] as usize])
                    .collect(),
            ))
        }
        Some(gpu) => {
            let (kernel, groups) = row_kernel(
                gpu,
                "cross_entropy",
                include_str!("../../shaders/cross_entropy.wgsl"),
                "main",
                rows,
            );
            let params = LossParams::new(rows, cols, scale);
            launch1(gpu, &kernel, &params, &[logits, targets], rows, groups)?
        }
    };
    let op = CrossEntropy {
        logits: logits.clone(),
        targets: targets.clone(),
        scale,
        per_row: PerRow::Each,
    };
    Ok(Tensor::from_op(
        vec![rows],
        DType::F32,
        logits.device(),
        storage,
        op,
    ))
}

impl LossParams {
    fn new(rows: usize, cols: usize, scale: f32) -> LossParams {
        LossParams {
            rows: rows as u32,
            cols: cols as u32,
            scale,
        }
    }
}

/// The cross-entropy, as recorded for backward; the targets get no gradient. Per row
/// (`PerRow::Each`), or their mean (`PerRow::Shared`: the rows' losses, each divided by the
/// rows, summed), whose one gradient every row reads as it is, where the sum's rule would
/// first spread it over the rows by a copy (a dispatch every training step).
struct CrossEntropy {
    logits: Tensor,
    targets: Tensor,
    scale: f32,
    per_row: PerRow,
}

impl Backward for CrossEntropy {
    fn inputs(&self) -> Vec<&Tensor> {
        vec![&self.logits]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let (logits, targets) = (&self.logits, &self.targets);
        Ok(vec![cross_entropy_backward(
            (logits, targets),
            (g, self.per_row),
            self.scale,
        )?])
    }
}

/// Whether each row of the cross-entropy has its own gradient or all share one value.
#[derive(Clone, Copy, PartialEq)]
enum PerRow {
    Each,
    Shared,
}

/// dx of the per-row cross-entropy: scale · g[row] (softmax - onehot), or scale · g[0] with
/// `PerRow::Shared`.
fn cross_entropy_backward(
    (logits, targets): (&Tensor, &Tensor),
    (g, per_row): (&Tensor, PerRow),
    scale: f32,
) -> Result<Tensor> {
    let (rows, cols) = (logits.shape()[0], logits.shape()[1]);
    let storage = match gpu_of(logits.device()) {
        None => {
            let t = targets.host_u32("cross_entropy backward")?;
            let gv = g.host_f64("cross_entropy backward")?;
            let scale = scale as f64;
            let mut dx = cpu_softmax(&logits.host_f64("cross_entropy backward")?, cols, false);
            for r in 0..rows {
                dx[r * cols + t[r] as usize] -= 1.0;
                dx[r * cols..(r + 1) * cols]
                    .iter_mut()
                    .for_each(|d| *d *= scale * gv[if per_row == PerRow::Shared { 0 } else { r }]);
            }
            Storage::Host(Host::F(dx))
        }
        Some(gpu) => {
            let (kernel, groups) = row_kernel(
                gpu,
                "cross_entropy_backward",
                include_str!("../../shaders/cross_entropy_backward.wgsl"),
                "main",
                rows,
            );
            let kernel = kernel.constant("SHARED_G", per_row == PerRow::Shared);
            let params = LossParams::new(rows, cols, scale);
            let inputs = [logits, targets, g];
            launch1(gpu, &kernel, &params, &inputs, logits.numel(), groups)?
        }
    };
    Ok(Tensor::from_storage(
        logits.shape().to_vec(),
        DType::F32,
        logits.device(),
        storage,
    ))
}

impl Tensor {
    /// Softmax over the last axis.
    pub fn softmax(&self) -> Result<Tensor> {
        softmax_any(self, false)
    }

    /// Log-softmax over the last axis.
    pub fn log_softmax(&self) -> Result<Tensor> {
        softmax_any(self, true)
    }

    /// Mean softmax cross-entropy of logits [rows, classes] against u32 targets [rows]. On the
    /// GPU a target outside the classes makes the loss NaN; on the CPU it is an error.
    pub fn cross_entropy(&self, targets: &Tensor) -> Result<Tensor> {
        // Each row's loss comes out divided by the rows: the mean is then their sum. No rows
        // keep the mean of nothing, NaN, as a mean gives it.
        let scale = match self.shape().first().copied().unwrap_or(0) {
            0 => return cross_entropy_rows(self, targets, 1.0)?.mean_all(),
            rows => 1.0 / rows as f32,
        };
        let mean = no_grad(|| cross_entropy_rows(self, targets, scale)?.sum_all())?;
        let op = CrossEntropy {
            logits: self.clone(),
            targets: targets.clone(),
            scale,
            per_row: PerRow::Shared,
        };
        Ok(Tensor::adopt(&mean, op))
    }
}
