//! The ops: one module per family, each with its forward launch, its backward rule (a
//! `Backward` impl that the forward records) and its CPU reference. Ops run where their inputs
//! live: GPU tensors run WGSL kernels, CPU tensors run the reference in f64.

mod attention;
mod binary;
mod conv;
mod copy;
mod cross_entropy;
pub(crate) use copy::filled;
mod dropout;
mod embedding;
mod layernorm;
mod linear;
mod linear_cross_entropy;
mod lora;
mod matmul;
mod movement;
mod paced;
mod pad;
mod pool;
mod reduce;
mod rmsnorm;
mod shape;
mod softmax;
mod unary;
mod windows;

pub(crate) use attention::{attention_candidates, scores_bytes, AttentionTimer};
pub use binary::Binary;
pub use linear_cross_entropy::cross_entropy_chunk_rows;
pub(crate) use linear_cross_entropy::FROZEN_CHUNK_BYTES;
/// The variants a product shape may run as on a device, the planner's own first.
pub use matmul::product_candidates;
/// The kernel a product takes, which tests assert through `Gpu::dispatches_of`.
pub use matmul::Path as ProductPath;
pub(crate) use matmul::{
    matmul_into, matmul_raw, matmul_row_bias, Causal, Dims as ProductDims, LargeTileTimer, Layout,
    ProductTimer, Views, BIG_TILE_WORKGROUP_BYTES,
};
pub use shape::broadcast_shapes;
pub use unary::Unary;
pub(crate) use windows::{row_windows, times, times_transposed};

use crate::error::Result;
use crate::gpu::{Binding, Gpu, Kernel, KernelParams, PooledBuffer, MAX_BINDINGS, ROW_WORKGROUP};
use crate::tensor::{gpu_output, Device, Storage, Tensor};
use smallvec::SmallVec;
use std::rc::Rc;

/// Whether the buffers can be read as vec4s whole (shaders/matmul.wgsl binds them so): pool
/// buffers are, unless one was sized exactly to the device's largest.
pub(crate) fn vec4_buffers(xs: &[&Tensor], op: &'static str) -> Result<bool> {
    for x in xs {
        // Four f16s (src/tensor/half.rs) take 8 bytes.
        let vec4_bytes = x.dtype().bytes(4);
        if x.buffer(op)?.binding_size() % vec4_bytes != 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Runs `kernel` reading `inputs` and writing fresh buffers of the given lengths (in 4-byte
/// elements); returns the output buffers, as many as lengths were given.
pub(crate) fn launch<const N: usize, P: KernelParams>(
    gpu: &Rc<Gpu>,
    kernel: &Kernel,
    params: &P,
    inputs: &[&Tensor],
    output_lens: [usize; N],
    groups: [u32; 3],
) -> Result<[PooledBuffer; N]> {
    launch_into(gpu, kernel, params, inputs, &[], output_lens, groups)
}

/// Like `launch`, also writing into `targets`: buffers bound read-write after the inputs and
/// before the fresh outputs, for an output that several dispatches fill in parts.
pub(crate) fn launch_into<const N: usize, P: KernelParams>(
    gpu: &Rc<Gpu>,
    kernel: &Kernel,
    params: &P,
    inputs: &[&Tensor],
    targets: &[&PooledBuffer],
    output_lens: [usize; N],
    groups: [u32; 3],
) -> Result<[PooledBuffer; N]> {
    // Inline, not on the heap: this runs for most dispatches.
    let input_buffers = inputs
        .iter()
        .map(|t| t.buffer(kernel.entry))
        .collect::<Result<SmallVec<[_; MAX_BINDINGS]>>>()?;
    let outputs = all_ok(output_lens.map(|n| gpu_output(gpu, n)))?;
    {
        let mut bindings: SmallVec<[Binding; MAX_BINDINGS]> =
            input_buffers.iter().map(Binding::read).collect();
        bindings.extend(targets.iter().map(|b| Binding::write(b.handle())));
        bindings.extend(outputs.iter().map(|b| Binding::write(b.handle())));
        gpu.dispatch(kernel, params, &bindings, groups)?;
    }
    Ok(outputs)
}

/// The values of `results`, or the first error among them.
fn all_ok<T, const N: usize>(results: [Result<T>; N]) -> Result<[T; N]> {
    if let Some(e) = results.iter().find_map(|r| r.as_ref().err()) {
        return Err(e.clone());
    }
    Ok(results.map(|r| r.expect("no error: checked above")))
}

/// Like `launch` with one output, wrapped as GPU storage.
pub(crate) fn launch1<P: KernelParams>(
    gpu: &Rc<Gpu>,
    kernel: &Kernel,
    params: &P,
    inputs: &[&Tensor],
    output_len: usize,
    groups: [u32; 3],
) -> Result<Storage> {
    let [out] = launch(gpu, kernel, params, inputs, [output_len], groups)?;
    Ok(Storage::Gpu(out))
}

crate::kernel_params! {
    /// A matrix of `rows` rows of `cols` values: the parameters of the row kernels (softmax,
    /// cross-entropy, LayerNorm backward).
    pub(crate) struct RowsParams { rows: u32, cols: u32 }
}

impl RowsParams {
    pub(crate) fn new(rows: usize, cols: usize) -> RowsParams {
        RowsParams {
            rows: rows as u32,
            cols: cols as u32,
        }
    }
}

/// The GPU of a device, if it is one.
pub fn gpu_of(device: &Device) -> Option<&Rc<Gpu>> {
    match device {
        Device::Gpu(g) => Some(g),
        Device::Cpu => None,
    }
}

/// Rows a workgroup of a shared-mode row kernel takes (shaders/rowwise.wgsl): on an H100 one
/// row of a few hundred columns per workgroup left the kernels bound by barriers and
/// workgroup starts (docs/BENCHMARKS.md).
pub(crate) const ROWS_PER_GROUP: u32 = 4;

/// How a row kernel spreads its rows over threads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum RowMode {
    /// A thread per row (shaders/rowwise_serial.wgsl): emulated GPUs, where barriers are
    /// costly, and rows whose neighbours are neighbours in memory, as columns of a matrix are.
    Serial,
    /// ROW_WORKGROUP threads per row, this many rows to a workgroup (shaders/rowwise.wgsl).
    Shared(u32),
}

/// The longest row a thread takes alone on an emulated GPU: llvmpipe ends a shader's loops
/// after 65,535 iterations a thread, all loops together (its compiler's bound), and a row
/// kernel passes over its row up to three times (max, sum, output).
const SERIAL_COLUMNS_AT_MOST: usize = 16_384;

impl RowMode {
    /// The usual mode on `gpu` for rows of `cols` values: a longer row than a thread may take
    /// alone on an emulated GPU is shared by ROW_WORKGROUP threads (a vocabulary's logits).
    pub(crate) fn for_columns(gpu: &Gpu, cols: usize) -> RowMode {
        match RowMode::of(gpu) {
            RowMode::Serial if cols > SERIAL_COLUMNS_AT_MOST => RowMode::Shared(ROWS_PER_GROUP),
            mode => mode,
        }
    }

    /// The usual mode on `gpu`.
    pub(crate) fn of(gpu: &Gpu) -> RowMode {
        match gpu.is_cpu_emulated() {
            true => RowMode::Serial,
            false => RowMode::Shared(ROWS_PER_GROUP),
        }
    }
}

/// A row kernel in the usual mode on `gpu` (`RowMode::of`) and the workgroups that cover
/// `rows` rows.
pub(crate) fn row_kernel(
    gpu: &Gpu,
    family: &'static str,
    source: &'static str,
    entry: &'static str,
    rows: usize,
) -> (Kernel, [u32; 3]) {
    row_kernel_mode(RowMode::of(gpu), gpu, family, source, entry, rows)
}

/// `row_kernel` for rows of `cols` values, which may be long (`RowMode::for_columns`).
pub(crate) fn long_row_kernel(
    gpu: &Gpu,
    (family, source, entry): (&'static str, &'static str, &'static str),
    (rows, cols): (usize, usize),
) -> (Kernel, [u32; 3]) {
    let mode = RowMode::for_columns(gpu, cols);
    row_kernel_mode(mode, gpu, family, source, entry, rows)
}

/// `row_kernel` in the mode the caller chooses.
pub(crate) fn row_kernel_mode(
    mode: RowMode,
    gpu: &Gpu,
    family: &'static str,
    source: &'static str,
    entry: &'static str,
    rows: usize,
) -> (Kernel, [u32; 3]) {
    let kernel = Kernel::new(family, source, entry);
    match mode {
        RowMode::Serial => (
            kernel.slot("ROWWISE", "serial").slot("SCORES", "private"),
            gpu.groups_1d(rows, ROW_WORKGROUP),
        ),
        RowMode::Shared(per_group) => (
            kernel
                .slot("ROWWISE", "shared")
                .slot("SCORES", "workgroup")
                .slot("ROW_GROUP", per_group),
            gpu.groups_1d(rows, per_group),
        ),
    }
}
