//! The softmax cross-entropy with integer targets, fused: per row, or their mean.

use super::softmax::{cpu_softmax, rows_cols};
use super::{gpu_of, launch, launch1, long_row_kernel};
use crate::autograd::{self, no_grad, Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::Kernel;
use crate::tensor::{DType, Host, Storage, Tensor};

crate::kernel_params! {
    /// The cross-entropy kernels': `rows` rows of `cols` logits, each row's loss and gradient
    /// times `scale` (1 / rows for the mean, so that the mean is one sum with no pass of its
    /// own, forward or backward).
    struct LossParams { rows: u32, cols: u32, scale: f32 }
}

/// Logits of more elements than this have their mean loss summed by a pass of its own: one
/// workgroup takes a few rows each thread (an mlp's 128 rows of 10 classes), spreading more
/// over the GPU pays for the pass (a GPT's thousands of rows).
const MEAN_IN_ONE_PASS_UNDER: usize = 1 << 16;

/// (rows, classes) of logits [rows, classes] and u32 targets [rows] on one device.
pub(super) fn checked(logits: &Tensor, targets: &Tensor) -> Result<(usize, usize)> {
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
    rows_cols(logits, name)
}

/// Per-row loss scale · (logsumexp(x) - x[target]) for logits [rows, classes] and u32 targets
/// [rows], as `checked` found them.
pub(super) fn cross_entropy_rows(
    (logits, targets): (&Tensor, &Tensor),
    (rows, cols): (usize, usize),
    scale: f32,
) -> Result<Tensor> {
    let name = "cross_entropy";
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
            let source = include_str!("../../shaders/cross_entropy.wgsl");
            let (kernel, groups) =
                long_row_kernel(gpu, ("cross_entropy", source, "main"), (rows, cols));
            let params = LossParams::new(rows, cols, scale);
            launch1(gpu, &kernel, &params, &[logits, targets], rows, groups)?
        }
    };
    let op = CrossEntropy {
        logits: logits.clone(),
        targets: targets.clone(),
        scale,
        per_row: PerRow::Each,
        grad_from_one: None,
    };
    Ok(Tensor::from_op(
        vec![rows],
        DType::F32,
        logits.device(),
        storage,
        op,
    ))
}

/// The mean loss of few rows on the GPU in one pass (shaders/cross_entropy_mean.wgsl; `scale`
/// is 1 / rows), where the rows' losses and their sum would take two, and `with_grad`, the
/// logits' gradient for the loss's gradient of 1 from the same pass; None elsewhere.
fn mean_in_one_pass(
    (logits, targets): (&Tensor, &Tensor),
    (rows, cols): (usize, usize),
    scale: f32,
    with_grad: bool,
) -> Result<Option<(Tensor, Option<Tensor>)>> {
    let Some(gpu) = gpu_of(logits.device()) else {
        return Ok(None);
    };
    if rows == 0 || rows * cols >= MEAN_IN_ONE_PASS_UNDER {
        return Ok(None);
    }
    let kernel = Kernel::new(
        "cross_entropy_mean",
        include_str!("../../shaders/cross_entropy_mean.wgsl"),
        "main",
    )
    .constant("GRAD", with_grad);
    let params = LossParams::new(rows, cols, scale);
    // Without the gradient its binding holds one unwritten value.
    let grad_len = if with_grad { rows * cols } else { 1 };
    let inputs = [logits, targets];
    let [loss, dx] = launch(gpu, &kernel, &params, &inputs, [1, grad_len], [1, 1, 1])?;
    let device = logits.device();
    let loss = Tensor::from_storage(vec![], DType::F32, device, Storage::Gpu(loss));
    let dx = with_grad
        .then(|| Tensor::from_storage(vec![rows, cols], DType::F32, device, Storage::Gpu(dx)));
    Ok(Some((loss, dx)))
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
    /// The logits' gradient for the loss's gradient of 1, where the forward pass made it
    /// (`mean_in_one_pass`): backward from the loss then takes no pass for it.
    grad_from_one: Option<Tensor>,
}

impl Backward for CrossEntropy {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.logits]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let rows_grad = match self.per_row {
            PerRow::Each => RowsGrad::Each(g),
            PerRow::Shared => RowsGrad::Shared(g),
        };
        let (logits, targets) = (&self.logits, &self.targets);
        Ok(vec![cross_entropy_backward(
            (logits, targets),
            rows_grad,
            self.scale,
        )?])
    }
    fn backward_from_one(&self, _out: &Tensor) -> Result<Option<Vec<Tensor>>> {
        if self.per_row != PerRow::Shared {
            return Ok(None);
        }
        if let Some(dx) = &self.grad_from_one {
            return Ok(Some(vec![dx.clone()]));
        }
        let (logits, targets) = (&self.logits, &self.targets);
        let dx = cross_entropy_backward((logits, targets), RowsGrad::One, self.scale)?;
        Ok(Some(vec![dx]))
    }
}

/// Whether each row of the cross-entropy has its own gradient or all share one value.
#[derive(Clone, Copy, PartialEq)]
enum PerRow {
    Each,
    Shared,
}

/// The gradient the cross-entropy's rows are scaled by: each its own, all the mean's one
/// value, or the 1 that backward starts from at the loss (no pass then fills it).
#[derive(Clone, Copy)]
pub(super) enum RowsGrad<'a> {
    Each(&'a Tensor),
    Shared(&'a Tensor),
    One,
}

/// dx of the per-row cross-entropy: scale · g (softmax - onehot), g as `rows_grad` gives it.
pub(super) fn cross_entropy_backward(
    (logits, targets): (&Tensor, &Tensor),
    rows_grad: RowsGrad,
    scale: f32,
) -> Result<Tensor> {
    let (rows, cols) = (logits.shape()[0], logits.shape()[1]);
    let storage = match gpu_of(logits.device()) {
        None => {
            let t = targets.host_u32("cross_entropy backward")?;
            let g_of_rows = match rows_grad {
                RowsGrad::Each(g) => g.host_f64("cross_entropy backward")?,
                RowsGrad::Shared(g) => vec![g.host_f64("cross_entropy backward")?[0]; rows],
                RowsGrad::One => vec![1.0; rows],
            };
            let scale = scale as f64;
            let mut dx = cpu_softmax(&logits.host_f64("cross_entropy backward")?, cols, false);
            for r in 0..rows {
                dx[r * cols + t[r] as usize] -= 1.0;
                let by = scale * g_of_rows[r];
                dx[r * cols..(r + 1) * cols]
                    .iter_mut()
                    .for_each(|d| *d *= by);
            }
            Storage::Host(Host::F(dx))
        }
        Some(gpu) => {
            let source = include_str!("../../shaders/cross_entropy_backward.wgsl");
            let (kernel, groups) = long_row_kernel(
                gpu,
                ("cross_entropy_backward", source, "main"),
                (rows, cols),
            );
            // With `One` the kernel reads no gradient: the logits stand in its binding.
            let (g, shared, one) = match rows_grad {
                RowsGrad::Each(g) => (g, false, false),
                RowsGrad::Shared(g) => (g, true, false),
                RowsGrad::One => (logits, true, true),
            };
            let kernel = kernel.constant("SHARED_G", shared).constant("ONE_G", one);
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
    /// Mean softmax cross-entropy of logits [rows, classes] against u32 targets [rows]. On the
    /// GPU a target outside the classes makes the loss NaN; on the CPU it is an error.
    pub fn cross_entropy(&self, targets: &Tensor) -> Result<Tensor> {
        // Each row's loss comes out divided by the rows: the mean is then their sum. No rows
        // keep the mean of nothing, NaN, as a mean gives it.
        let dims = checked(self, targets)?;
        let scale = match dims.0 {
            0 => return cross_entropy_rows((self, targets), dims, 1.0)?.mean_all(),
            rows => 1.0 / rows as f32,
        };
        let with_grad = autograd::is_enabled() && self.requires_grad();
        let one_pass = mean_in_one_pass((self, targets), dims, scale, with_grad)?;
        let (mean, grad_from_one) = match one_pass {
            Some(both) => both,
            // The rows' losses and their sum, recorded as this op alone.
            None => {
                let sum = no_grad(|| cross_entropy_rows((self, targets), dims, scale)?.sum_all());
                (sum?, None)
            }
        };
        let op = CrossEntropy {
            logits: self.clone(),
            targets: targets.clone(),
            scale,
            per_row: PerRow::Shared,
            grad_from_one,
        };
        Ok(Tensor::adopt(&mean, op))
    }
}
