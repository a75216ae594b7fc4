//! Reductions along an axis and over everything: sum, mean, max (backward through the arg-max),
//! and `sum_to_shape`, which undoes broadcasting in backward passes.

use super::shape::{axis_index, broadcast_shapes};
use super::{gpu_of, launch, launch1, row_kernel, row_kernel_mode, RowMode};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel};
use crate::tensor::{numel, DType, Host, Storage, Tensor};
use std::rc::Rc;

const SUM: &str = include_str!("../../shaders/reduce_sum.wgsl");
const MAX: &str = include_str!("../../shaders/reduce_max.wgsl");

crate::kernel_params! {
    /// A tensor viewed as [outer, n, inner] around the reduced axis (reduce_sum, reduce_max,
    /// scatter_axis).
    pub(crate) struct AxisParams { outer: u32, n: u32, inner: u32 }
}

crate::kernel_params! {
    /// shaders/sum_columns.wgsl: [outer, n, inner] summed over `chunk` rows at a time.
    struct SumColumnsParams { outer: u32, n: u32, inner: u32, chunk: u32 }
}

impl AxisParams {
    fn new((outer, n, inner): (usize, usize, usize)) -> AxisParams {
        AxisParams {
            outer: outer as u32,
            n: n as u32,
            inner: inner as u32,
        }
    }
}

/// [outer, n, inner] around `axis`.
fn split(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        numel(&shape[..axis]),
        shape[axis],
        numel(&shape[axis + 1..]),
    )
}

fn keepdim_shape(shape: &[usize], axis: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    s[axis] = 1;
    s
}

fn drop_axis(shape: &[usize], axis: usize) -> Vec<usize> {
    let mut s = shape.to_vec();
    s.remove(axis);
    s
}

/// Sum along `axis`, keeping it with size 1.
fn sum_keepdim(x: &Tensor, axis: usize) -> Result<Tensor> {
    let (outer, n, inner) = split(x.shape(), axis);
    let storage = match gpu_of(x.device()) {
        None => {
            let v = x.host_f64("sum")?;
            let mut out = vec![0.0; outer * inner];
            for o in 0..outer {
                for j in 0..n {
                    for i in 0..inner {
                        out[o * inner + i] += v[(o * n + j) * inner + i];
                    }
                }
            }
            Storage::Host(Host::F(out))
        }
        Some(gpu) => {
            if inner == 1 && outer <= LONG_ROWS_AT_MOST && n >= LONG_ROW {
                return sum_long_rows(x, (outer, n), &keepdim_shape(x.shape(), axis));
            }
            if let Some(sums) = sum_columns(gpu, x, (outer, n, inner))? {
                sums
            } else {
                // Emulated GPUs sum a column per thread: long columns are first cut into
                // chunks summed in parallel.
                let cols = outer * inner;
                if inner >= 64 && n >= 2048 && cols < 1 << 16 {
                    if let Some(s) = [64, 32, 16, 8]
                        .into_iter()
                        .find(|s| n % s == 0 && n / s >= 64)
                    {
                        let parts = sum_keepdim(&x.reshape(&[outer * s, n / s, inner])?, 1)?;
                        return sum_keepdim(&parts.reshape(&[outer, s, inner])?, 1)?
                            .reshape(&keepdim_shape(x.shape(), axis));
                    }
                }
                sum_rowwise(gpu, x, (outer, n, inner))?
            }
        }
    };
    Ok(Tensor::from_op(
        keepdim_shape(x.shape(), axis),
        DType::F32,
        x.device(),
        storage,
        SumAxis { x: x.clone() },
    ))
}

/// Rows at least this long, and at most `LONG_ROWS_AT_MOST` of them, are summed in parallel
/// pieces (`sum_long_rows`).
const LONG_ROW: usize = 1 << 16;
const LONG_ROWS_AT_MOST: usize = 64;
/// The width of the columns a long row is cut into.
const LONG_ROW_PIECE: usize = 1024;

/// A few long rows of [outer, n] summed. A workgroup per row would leave a large GPU idle (the
/// squared norm of 10 million gradients, for clipping, took 11 ms on an H100), and on emulated
/// GPUs, where a thread sums a whole row, llvmpipe (lavapipe) stops every loop after 65,535
/// iterations: a longer row came back summed only that far. So each row is cut into
/// `LONG_ROW_PIECE`-wide columns, summed in parallel, then those sums, and the few elements
/// left over beside them. Built of ops with their own backward rules, so it needs none.
fn sum_long_rows(x: &Tensor, (outer, n): (usize, usize), shape: &[usize]) -> Result<Tensor> {
    let rows = x.reshape(&[outer, n])?;
    let whole = n / LONG_ROW_PIECE * LONG_ROW_PIECE;
    let pieces =
        rows.slice(1, 0, whole)?
            .reshape(&[outer, whole / LONG_ROW_PIECE, LONG_ROW_PIECE])?;
    let mut sums = pieces.sum(1, false)?.sum(1, true)?;
    if whole < n {
        sums = sums.add(&rows.slice(1, whole, n - whole)?.sum(1, true)?)?;
    }
    sums.reshape(shape)
}

/// A sum over one axis (kept), as recorded for backward: the gradient spreads back evenly.
struct SumAxis {
    x: Tensor,
}

impl Backward for SumAxis {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![g.expand(self.x.shape())?])
    }
}

/// Workgroups that keep every SM of a large GPU busy.
pub(crate) const BUSY_GROUPS: usize = 1024;

/// Columns this short are summed in one pass: a thread of it then adds 64 values, and a second
/// pass would cost a dispatch more than it saves (in the browser a dispatch costs the page
/// 4-8 µs of CPU). A batch of 128 rows, the digits' models' bias and weight gradients.
const ONE_PASS_ROWS: usize = 256;

/// Sums of the wide columns of [outer, n, inner] on real GPUs (shaders/sum_columns.wgsl):
/// chunks of rows summed in parallel, then their partial sums. None where the kernel does not
/// apply (emulated GPUs, narrow rows, empty tensors, more workgroups than a dispatch may have).
fn sum_columns(
    gpu: &Rc<Gpu>,
    x: &Tensor,
    (outer, n, inner): (usize, usize, usize),
) -> Result<Option<Storage>> {
    let col_groups = inner.div_ceil(64);
    let max = gpu.limits().max_compute_workgroups_per_dimension as usize;
    let empty = n == 0 || outer == 0;
    if gpu.is_cpu_emulated() || inner < 64 || empty || col_groups > max || outer > max {
        return Ok(None);
    }
    let chunks = match n <= ONE_PASS_ROWS {
        true => 1,
        false => (BUSY_GROUPS / (col_groups * outer)).clamp(1, n.div_ceil(64).max(1)),
    };
    let chunk = n.div_ceil(chunks);
    let chunks = n.div_ceil(chunk);
    let kernel = Kernel::new(
        "sum_columns",
        include_str!("../../shaders/sum_columns.wgsl"),
        "main",
    );
    let pass = |input: &Tensor, n: usize, chunk: usize, chunks: usize| {
        let params = SumColumnsParams {
            outer: outer as u32,
            n: n as u32,
            inner: inner as u32,
            chunk: chunk as u32,
        };
        let groups = [col_groups as u32, chunks as u32, outer as u32];
        launch1(
            gpu,
            &kernel,
            &params,
            &[input],
            outer * chunks * inner,
            groups,
        )
    };
    let partial = pass(x, n, chunk, chunks)?;
    if chunks == 1 {
        return Ok(Some(partial));
    }
    let partial = Tensor::from_storage(vec![outer, chunks, inner], DType::F32, x.device(), partial);
    Ok(Some(pass(&partial, chunks, chunks, 1)?))
}

/// Sums along the middle axis of [outer, n, inner] with the row kernels: a thread per column
/// on emulated GPUs and for wide rows, else a workgroup per column.
fn sum_rowwise(
    gpu: &Rc<Gpu>,
    x: &Tensor,
    (outer, n, inner): (usize, usize, usize),
) -> Result<Storage> {
    let cols = outer * inner;
    // Wide rows: neighbouring threads read neighbouring columns, so a thread per column.
    let mode = match inner >= 64 {
        true => RowMode::Serial,
        false => RowMode::of(gpu),
    };
    let (kernel, groups) = row_kernel_mode(mode, gpu, "reduce_sum", SUM, "sum_axis", cols);
    let params = AxisParams::new((outer, n, inner));
    launch1(gpu, &kernel, &params, &[x], cols, groups)
}

/// Max along `axis` (kept with size 1) and the index of the first maximum.
fn max_keepdim(x: &Tensor, axis: usize) -> Result<(Tensor, Tensor)> {
    let (outer, n, inner) = split(x.shape(), axis);
    if n == 0 {
        return Err(Error::Invalid {
            op: "max",
            why: "cannot take the max of an empty axis".into(),
        });
    }
    let (values, index) = match gpu_of(x.device()) {
        None => {
            let v = x.host_f64("max")?;
            let mut values = vec![0.0; outer * inner];
            let mut index = vec![0u32; outer * inner];
            for o in 0..outer {
                for i in 0..inner {
                    let at = |j: usize| v[(o * n + j) * inner + i];
                    let best = (1..n).fold(0, |b, j| {
                        if at(j) > at(b) || (at(j).is_nan() && !at(b).is_nan()) {
                            j
                        } else {
                            b
                        }
                    });
                    values[o * inner + i] = at(best);
                    index[o * inner + i] = best as u32;
                }
            }
            (
                Storage::Host(Host::F(values)),
                Storage::Host(Host::U(index)),
            )
        }
        Some(gpu) => {
            let cols = outer * inner;
            let (kernel, groups) = row_kernel(gpu, "reduce_max", MAX, "max_axis", cols);
            let params = AxisParams::new((outer, n, inner));
            let [values, index] = launch(gpu, &kernel, &params, &[x], [cols, cols], groups)?;
            (Storage::Gpu(values), Storage::Gpu(index))
        }
    };
    let shape = keepdim_shape(x.shape(), axis);
    let argmax = Tensor::from_storage(shape.clone(), DType::U32, x.device(), index);
    let op = MaxAxis {
        x: x.clone(),
        axis,
        argmax: argmax.clone(),
    };
    Ok((
        Tensor::from_op(shape, DType::F32, x.device(), values, op),
        argmax,
    ))
}

/// A max over one axis, as recorded for backward, with where each maximum was.
struct MaxAxis {
    x: Tensor,
    axis: usize,
    argmax: Tensor,
}

impl Backward for MaxAxis {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![max_backward(&self.x, self.axis, &self.argmax, g)?])
    }
}

/// dx of max: the gradient goes to the arg-max of each column.
fn max_backward(x: &Tensor, axis: usize, argmax: &Tensor, g: &Tensor) -> Result<Tensor> {
    let (outer, n, inner) = split(x.shape(), axis);
    let storage = match gpu_of(x.device()) {
        None => {
            let (index, gv) = (
                argmax.host_u32("max backward")?,
                g.host_f64("max backward")?,
            );
            let mut dx = vec![0.0; x.numel()];
            for col in 0..outer * inner {
                let (o, i) = (col / inner, col % inner);
                dx[(o * n + index[col] as usize) * inner + i] = gv[col];
            }
            Storage::Host(Host::F(dx))
        }
        Some(gpu) => {
            let kernel = Kernel::new(
                "scatter_axis",
                include_str!("../../shaders/scatter_axis.wgsl"),
                "main",
            );
            let params = AxisParams::new((outer, n, inner));
            let groups = gpu.groups_elementwise(x.numel());
            launch1(gpu, &kernel, &params, &[argmax, g], x.numel(), groups)?
        }
    };
    Ok(Tensor::from_storage(
        x.shape().to_vec(),
        DType::F32,
        x.device(),
        storage,
    ))
}

impl Tensor {
    /// Sum along `axis` (negative counts from the end).
    pub fn sum(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        self.expect_dtype("sum", DType::F32)?;
        let a = axis_index("sum", axis, self.rank())?;
        let s = sum_keepdim(self, a)?;
        if keepdim {
            Ok(s)
        } else {
            s.reshape(&drop_axis(self.shape(), a))
        }
    }

    /// Sum of all elements, as a scalar (shape []).
    pub fn sum_all(&self) -> Result<Tensor> {
        self.reshape(&[self.numel()])?.sum(0, false)
    }

    /// Mean along `axis`.
    pub fn mean(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        let a = axis_index("mean", axis, self.rank())?;
        let n = self.shape()[a];
        self.sum(axis, keepdim)?.scale(1.0 / n as f32)
    }

    /// Mean of all elements, as a scalar.
    pub fn mean_all(&self) -> Result<Tensor> {
        let n = self.numel();
        self.sum_all()?.scale(1.0 / n as f32)
    }

    /// Max along `axis`; the gradient flows to the first arg-max.
    pub fn max(&self, axis: isize, keepdim: bool) -> Result<Tensor> {
        self.expect_dtype("max", DType::F32)?;
        let a = axis_index("max", axis, self.rank())?;
        let (m, _) = max_keepdim(self, a)?;
        if keepdim {
            Ok(m)
        } else {
            m.reshape(&drop_axis(self.shape(), a))
        }
    }

    /// Index of the first maximum along `axis` (u32, the axis removed).
    pub fn argmax(&self, axis: isize) -> Result<Tensor> {
        self.expect_dtype("argmax", DType::F32)?;
        let a = axis_index("argmax", axis, self.rank())?;
        let (_, index) = crate::autograd::no_grad(|| max_keepdim(self, a))?;
        index.reshape(&drop_axis(self.shape(), a))
    }

    /// Max of all elements, as a scalar.
    pub fn max_all(&self) -> Result<Tensor> {
        self.reshape(&[self.numel()])?.max(0, false)
    }

    /// Sums a broadcast gradient back down to `shape` (the inverse of broadcasting).
    pub fn sum_to_shape(&self, shape: &[usize]) -> Result<Tensor> {
        if self.shape() == shape {
            return Ok(self.clone());
        }
        let full = broadcast_shapes("sum_to_shape", shape, self.shape())?;
        if full != self.shape() {
            return Err(Error::Shape {
                op: "sum_to_shape",
                a: self.shape().to_vec(),
                b: shape.to_vec(),
                why: "the target does not broadcast to the source".into(),
            });
        }
        let pad = self.rank() - shape.len();
        let kept = |axis: usize| axis >= pad && shape[axis - pad] != 1;
        // Each run of neighbouring axes summed away is summed as one axis, the innermost run
        // first: a convolution's bias gradient, [n, c, h, w] to [c], takes two reductions
        // instead of three (and two dispatches instead of four).
        let mut t = self.clone();
        let mut end = self.rank();
        while end > 0 {
            if kept(end - 1) {
                end -= 1;
                continue;
            }
            let start = (0..end)
                .rev()
                .take_while(|&a| !kept(a))
                .last()
                .unwrap_or(end);
            let run = numel(&self.shape()[start..end]);
            if run > 1 {
                let mut merged = t.shape()[..start].to_vec();
                merged.push(run);
                merged.extend_from_slice(&t.shape()[end..]);
                t = sum_keepdim(&t.reshape(&merged)?, start)?;
            }
            end = start;
        }
        t.reshape(shape)
    }
}
