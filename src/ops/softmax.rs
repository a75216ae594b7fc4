//! Softmax and log-softmax over the last axis.

use super::{gpu_of, launch1, long_row_kernel, RowsParams};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::tensor::{DType, Host, Storage, Tensor};

/// (rows, cols) of a tensor seen as rows of its last axis.
pub(super) fn rows_cols(x: &Tensor, op: &'static str) -> Result<(usize, usize)> {
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

pub(super) fn cpu_softmax(v: &[f64], cols: usize, log: bool) -> Vec<f64> {
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
            let source = include_str!("../../shaders/softmax.wgsl");
            let (kernel, groups) = long_row_kernel(gpu, ("softmax", source, "main"), (rows, cols));
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
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
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
            let source = include_str!("../../shaders/softmax_backward.wgsl");
            let (kernel, groups) =
                long_row_kernel(gpu, ("softmax_backward", source, "main"), (rows, cols));
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

impl Tensor {
    /// Softmax over the last axis.
    pub fn softmax(&self) -> Result<Tensor> {
        softmax_any(self, false)
    }

    /// Log-softmax over the last axis.
    pub fn log_softmax(&self) -> Result<Tensor> {
        softmax_any(self, true)
    }
}
