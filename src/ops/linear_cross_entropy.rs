//! An output layer and its mean cross-entropy, a chunk of rows at a time: the logits of a
//! large vocabulary (GPT-2's 50,257 words over 8 × 256 tokens are 412 MB) never exist whole.
//! Each chunk's logits make its part of the loss and, when a gradient is wanted, their own
//! gradient at once, which goes straight into the input's and the weight's gradients; the
//! chunk's logits are then dropped. Backward only scales those gradients by the loss's.

use super::cross_entropy::{checked, cross_entropy_backward, cross_entropy_rows, RowsGrad};
use super::{gpu_of, launch, row_windows, times, times_transposed};
use crate::autograd::{self, no_grad, Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::{Binding, Kernel};
use crate::tensor::{gpu_output, DType, Device, Storage, Tensor};

/// The logits a chunk may hold where the weight is frozen: WebGPU's guaranteed binding size.
/// GPT-2 fine-tuned with LoRA (8 × 256 tokens, H200) held 4.29 GB with its logits whole, 3.56
/// GB in chunks of 64 MiB at 7 % more a step (the chunks' products were too small to fill the
/// GPU), 3.88 GB in chunks of 160 MiB at 3 % less.
pub(crate) const FROZEN_CHUNK_BYTES: u64 = 128 << 20;

/// The most rows of logits over `classes` that one chunk takes on `device`, for a weight that
/// trains or not. A trained weight sums its gradient over the chunks (a pass over the whole
/// weight each), so it chunks only where one buffer could not hold the logits; a frozen one
/// chunks to `FROZEN_CHUNK_BYTES`. The CPU takes every row at once.
pub fn cross_entropy_chunk_rows(device: &Device, classes: usize, weight_trains: bool) -> usize {
    let Device::Gpu(gpu) = device else {
        return usize::MAX;
    };
    let largest = gpu.largest_buffer();
    let budget = match weight_trains {
        true => largest,
        false => largest.min(FROZEN_CHUNK_BYTES),
    };
    (budget / (classes.max(1) as u64 * 4)).max(1) as usize
}

impl Tensor {
    /// The mean softmax cross-entropy of the logits self · weightᵀ + bias (self [rows, K],
    /// weight [classes, K], bias [classes]) against u32 targets [rows], at most `chunk_rows`
    /// rows at a time (the chunks evened out, and rounded up to where a binding may start).
    /// The bias takes no gradient (a constant such as a mask of padded classes). Equal to
    /// `self.linear(weight, bias)?.cross_entropy(targets)` in value and gradients.
    pub fn linear_cross_entropy(
        &self,
        (weight, bias): (&Tensor, Option<&Tensor>),
        targets: &Tensor,
        chunk_rows: usize,
    ) -> Result<Tensor> {
        let invalid = |why: String| Error::Invalid {
            op: "linear_cross_entropy",
            why,
        };
        if chunk_rows == 0 {
            return Err(invalid("a chunk must hold at least one row".into()));
        }
        if bias.is_some_and(|b| b.requires_grad()) {
            return Err(invalid("the bias takes no gradient here".into()));
        }
        let rows = self.shape().first().copied().unwrap_or(0);
        if targets.shape() != [rows] {
            return Err(invalid(format!(
                "{:?} targets for inputs {:?}: one a row",
                targets.shape(),
                self.shape()
            )));
        }
        if rows == 0 {
            return Err(invalid("no rows to take the mean of".into()));
        }
        // As few chunks as `chunk_rows` allow, of equal rows: no small last chunk.
        let chunks = rows.div_ceil(chunk_rows);
        let chunk_rows = aligned_rows(self.device(), rows.div_ceil(chunks));
        let wanted = |t: &Tensor| autograd::is_enabled() && t.requires_grad();
        let (x_grad, w_grad) = (wanted(self), wanted(weight));
        let parts = no_grad(|| {
            let mut parts = Chunks::default();
            for start in (0..rows).step_by(chunk_rows) {
                let len = chunk_rows.min(rows - start);
                let (x, t) = match len == rows {
                    true => (self.clone(), targets.clone()),
                    false => (
                        self.slice(0, start, len)?,
                        targets_from(targets, start, len)?,
                    ),
                };
                parts.add(chunk(&x, (weight, bias), &t, (rows, x_grad, w_grad))?)?;
            }
            Ok::<_, Error>(parts)
        })?;
        let mut grads = Vec::new();
        if let Some(dx) = parts.dx {
            grads.push((self.clone(), no_grad(|| Tensor::concat(&dx, 0))?));
        }
        if let Some(dw) = parts.dw {
            grads.push((weight.clone(), dw));
        }
        let loss = parts.loss.expect("at least one row, so one chunk");
        Ok(Tensor::adopt(&loss, LinearCrossEntropy { grads }))
    }
}

/// `rows` rounded up to where a binding may start in a buffer of u32s on `device` (64 rows
/// for the usual 256 bytes), for each chunk's targets to be a view of the batch's.
fn aligned_rows(device: &Device, rows: usize) -> usize {
    match device {
        Device::Gpu(gpu) => {
            let align = (gpu.limits().min_storage_buffer_offset_alignment as usize / 4).max(1);
            rows.next_multiple_of(align)
        }
        Device::Cpu => rows,
    }
}

/// Targets `start..start + len` of `targets`: on the GPU a view sharing the batch's buffer
/// (`start` is aligned by `aligned_rows`), on the CPU a copy.
fn targets_from(targets: &Tensor, start: usize, len: usize) -> Result<Tensor> {
    match targets.device() {
        Device::Gpu(_) => Ok(targets.part(start, &[len])),
        Device::Cpu => {
            let all = targets.host_u32("linear_cross_entropy")?;
            Tensor::from_u32(all[start..start + len].to_vec(), &[len], targets.device())
        }
    }
}

/// What one chunk gives: its part of the mean loss, and its rows' input gradient and its share
/// of the weight's, each for a loss gradient of 1, where wanted.
struct Chunk {
    loss: Tensor,
    dx: Option<Tensor>,
    dw: Option<Tensor>,
}

/// One chunk's logits, loss and gradients: `rows` is the whole batch's (the mean divides by
/// it), then whether the input's and the weight's gradients are wanted.
fn chunk(
    x: &Tensor,
    (weight, bias): (&Tensor, Option<&Tensor>),
    targets: &Tensor,
    (rows, x_grad, w_grad): (usize, bool, bool),
) -> Result<Chunk> {
    let logits = match row_windows(weight) {
        None => x.linear(weight, bias)?,
        // A table larger than a binding (a frozen GPT-2's on a GPU binding 128 MiB): bound a
        // window of rows at a time, unpadded, so with no bias.
        Some(_) if bias.is_none() && !w_grad => times_transposed(x, weight)?,
        Some(_) => {
            return Err(Error::Invalid {
                op: "linear_cross_entropy",
                why: "a weight larger than one binding takes no bias and no gradient here".into(),
            })
        }
    };
    let scale = 1.0 / rows as f32;
    let (row_losses, dlogits) = loss_and_gradient(logits, targets, scale, x_grad || w_grad)?;
    let loss = row_losses.sum_all()?;
    let Some(dlogits) = dlogits else {
        return Ok(Chunk {
            loss,
            dx: None,
            dw: None,
        });
    };
    Ok(Chunk {
        loss,
        dx: x_grad.then(|| times(&dlogits, weight)).transpose()?,
        dw: w_grad
            .then(|| dlogits.matmul_t(x, true, false))
            .transpose()?,
    })
}

crate::kernel_params! {
    /// The blocked cross-entropy's: `rows` rows of `cols` logits, `blocks` blocks of
    /// `BLOCK_COLUMNS` columns a row, each row's loss and gradient times `scale`.
    struct BlockParams { rows: u32, cols: u32, blocks: u32, scale: f32 }
}

/// The columns a workgroup of the blocked cross-entropy takes (the shaders' BLOCK): 16 a
/// thread, so that a row of 50,257 logits is 13 workgroups' work, not one's.
const BLOCK_COLUMNS: usize = 4096;

/// Each row's loss times `scale` (scale · (logsumexp - logit of the target)) and, when
/// `with_grad`, the logits' gradient for a loss gradient of 1, written over the logits, which
/// this takes. On a GPU through blocks of columns (shaders/cross_entropy_partials.wgsl, then
/// cross_entropy_blocks.wgsl): a chunk's few hundred rows, one workgroup each, left most of an
/// H200 idle and took as long as 2,048 rows; on the CPU through the cross-entropy's reference.
fn loss_and_gradient(
    logits: Tensor,
    targets: &Tensor,
    scale: f32,
    with_grad: bool,
) -> Result<(Tensor, Option<Tensor>)> {
    let (rows, cols) = checked(&logits, targets)?;
    let Some(gpu) = gpu_of(logits.device()) else {
        let losses = cross_entropy_rows((&logits, targets), (rows, cols), scale)?;
        let grad = with_grad
            .then(|| cross_entropy_backward((&logits, targets), RowsGrad::One, scale))
            .transpose()?;
        return Ok((losses, grad));
    };
    let blocks = cols.div_ceil(BLOCK_COLUMNS);
    let params = BlockParams {
        rows: rows as u32,
        cols: cols as u32,
        blocks: blocks as u32,
        scale,
    };
    let groups = gpu.groups_1d(rows * blocks, 1);
    let device = logits.device();
    let partials = Kernel::new(
        "cross_entropy_partials",
        include_str!("../../shaders/cross_entropy_partials.wgsl"),
        "main",
    );
    let [partials] = launch(
        gpu,
        &partials,
        &params,
        &[&logits],
        [rows * blocks * 2],
        groups,
    )?;
    let kernel = Kernel::new(
        "cross_entropy_blocks",
        include_str!("../../shaders/cross_entropy_blocks.wgsl"),
        "main",
    )
    .constant("GRAD", with_grad);
    let losses = gpu_output(gpu, rows)?;
    let (targets_buffer, x) = (
        targets.buffer("cross_entropy")?,
        logits.buffer("cross_entropy")?,
    );
    let bindings = [
        Binding::read(&targets_buffer),
        Binding::read(partials.handle()),
        Binding::write(&x),
        Binding::write(losses.handle()),
    ];
    gpu.dispatch(&kernel, &params, &bindings, groups)?;
    let losses = Tensor::from_storage(vec![rows], DType::F32, device, Storage::Gpu(losses));
    Ok((losses, with_grad.then_some(logits)))
}

/// The chunks' parts as they come: the loss and the weight's gradient summed, the input's
/// gradient in its rows' order.
#[derive(Default)]
struct Chunks {
    loss: Option<Tensor>,
    dx: Option<Vec<Tensor>>,
    dw: Option<Tensor>,
}

impl Chunks {
    fn add(&mut self, c: Chunk) -> Result<()> {
        self.loss = Some(sum(self.loss.take(), c.loss)?);
        if let Some(dx) = c.dx {
            self.dx.get_or_insert_with(Vec::new).push(dx);
        }
        if let Some(dw) = c.dw {
            self.dw = Some(sum(self.dw.take(), dw)?);
        }
        Ok(())
    }
}

fn sum(so_far: Option<Tensor>, more: Tensor) -> Result<Tensor> {
    match so_far {
        None => Ok(more),
        Some(s) => s.add(&more),
    }
}

/// The chunked loss as recorded for backward: each input that wanted a gradient, with that
/// gradient for a loss gradient of 1 (made in the forward pass, chunk by chunk).
struct LinearCrossEntropy {
    grads: Vec<(Tensor, Tensor)>,
}

impl Backward for LinearCrossEntropy {
    fn inputs(&self) -> Inputs<'_> {
        self.grads.iter().map(|(input, _)| input).collect()
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        self.grads.iter().map(|(_, d)| d.mul(g)).collect()
    }
    fn backward_from_one(&self, _out: &Tensor) -> Result<Option<Vec<Tensor>>> {
        Ok(Some(self.grads.iter().map(|(_, d)| d.clone()).collect()))
    }
}
