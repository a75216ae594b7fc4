//! RMSNorm over the last axis with a weight (`torch.nn.RMSNorm`): one row kernel forward, one
//! for dx backward, and dw as a column sum of g · x · rstd.

use super::{gpu_of, launch, launch1, row_kernel, RowsParams};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::tensor::{DType, Host, Storage, Tensor};

crate::kernel_params! {
    /// shaders/rmsnorm.wgsl.
    struct RmsNormParams { rows: u32, cols: u32, eps: f32 }
}

/// RMSNorm as recorded for backward, with each row's 1 / rms.
struct RmsNormOp {
    x: Tensor,
    weight: Tensor,
    rstd: Tensor,
}

impl Backward for RmsNormOp {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x, &self.weight]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let cols = self.weight.numel();
        let rows = self.x.numel() / cols;
        let dx = match gpu_of(self.x.device()) {
            None => Storage::Host(Host::F(cpu_dx(&self.x, &self.weight, &self.rstd, g)?)),
            Some(gpu) => {
                let (k, groups) = row_kernel(
                    gpu,
                    "rmsnorm_backward",
                    include_str!("../../shaders/rmsnorm_backward.wgsl"),
                    "main",
                    rows,
                );
                let params = RowsParams::new(rows, cols);
                let inputs = [&self.x, &self.weight, &self.rstd, g];
                launch1(gpu, &k, &params, &inputs, self.x.numel(), groups)?
            }
        };
        let dx = Tensor::from_storage(self.x.shape().to_vec(), DType::F32, self.x.device(), dx);
        let (x2, g2) = (self.x.reshape(&[rows, cols])?, g.reshape(&[rows, cols])?);
        let dw = g2.mul(&x2.mul(&self.rstd)?)?.sum(0, false)?;
        Ok(vec![dx, dw])
    }
}

/// Each row's 1 / sqrt(mean(x²) + eps), in f64.
fn cpu_rstd(x: &[f64], cols: usize, eps: f64) -> Vec<f64> {
    x.chunks(cols)
        .map(|row| 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / cols as f64 + eps).sqrt())
        .collect()
}

/// dx = rstd (g w - x rstd · mean(g w x rstd)), in f64.
fn cpu_dx(x: &Tensor, weight: &Tensor, rstd: &Tensor, g: &Tensor) -> Result<Vec<f64>> {
    let name = "rmsnorm backward";
    let (x, w, r, g) = (
        x.host_f64(name)?,
        weight.host_f64(name)?,
        rstd.host_f64(name)?,
        g.host_f64(name)?,
    );
    let cols = w.len();
    let mut dx = vec![0.0; x.len()];
    for (row, &rs) in r.iter().enumerate() {
        let at = row * cols;
        let m = (0..cols)
            .map(|j| g[at + j] * w[j] * x[at + j] * rs)
            .sum::<f64>()
            / cols as f64;
        for j in 0..cols {
            dx[at + j] = rs * (g[at + j] * w[j] - x[at + j] * rs * m);
        }
    }
    Ok(dx)
}

impl Tensor {
    /// RMSNorm over the last axis: x / sqrt(mean(x²) + eps) * weight, as `torch.nn.RMSNorm`.
    pub fn rmsnorm(&self, weight: &Tensor, eps: f32) -> Result<Tensor> {
        let name = "rmsnorm";
        for t in [self, weight] {
            t.expect_dtype(name, DType::F32)?;
            self.same_device(name, t)?;
        }
        let cols = self.shape().last().copied().unwrap_or(0);
        if cols == 0 {
            return Err(Error::Invalid {
                op: name,
                why: "needs a last axis of at least one element".into(),
            });
        }
        if weight.shape() != [cols] {
            return Err(Error::Shape {
                op: name,
                a: self.shape().to_vec(),
                b: weight.shape().to_vec(),
                why: "the weight must match the last axis".into(),
            });
        }
        let rows = self.numel() / cols;
        let (y, rstd) = match gpu_of(self.device()) {
            None => {
                let (x, w) = (self.host_f64(name)?, weight.host_f64(name)?);
                let rstd = cpu_rstd(&x, cols, eps as f64);
                let y = (0..x.len())
                    .map(|i| x[i] * rstd[i / cols] * w[i % cols])
                    .collect();
                (Storage::Host(Host::F(y)), Storage::Host(Host::F(rstd)))
            }
            Some(gpu) => {
                let (k, groups) = row_kernel(
                    gpu,
                    name,
                    include_str!("../../shaders/rmsnorm.wgsl"),
                    "main",
                    rows,
                );
                let params = RmsNormParams {
                    rows: rows as u32,
                    cols: cols as u32,
                    eps,
                };
                let lens = [self.numel(), rows];
                let [y, rstd] = launch(gpu, &k, &params, &[self, weight], lens, groups)?;
                (Storage::Gpu(y), Storage::Gpu(rstd))
            }
        };
        let rstd = Tensor::from_storage(vec![rows, 1], DType::F32, self.device(), rstd);
        let op = RmsNormOp {
            x: self.clone(),
            weight: weight.clone(),
            rstd,
        };
        Ok(Tensor::from_op(
            self.shape().to_vec(),
            DType::F32,
            self.device(),
            y,
            op,
        ))
    }
}
