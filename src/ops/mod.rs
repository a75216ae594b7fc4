//! The ops: one module per family, each with its forward launch, backward rule and CPU
//! reference. Ops run where their inputs live: GPU tensors run WGSL kernels, CPU tensors run
//! the reference in f64.

mod attention;
mod binary;
mod conv;
mod dropout;
mod embedding;
mod layernorm;
mod matmul;
mod matmul_regs;
mod movement;
mod pool;
mod reduce;
mod shape;
mod softmax;
mod unary;

pub(crate) use attention::attention_backward;
pub(crate) use binary::binary_backward;
pub use binary::Binary;
pub(crate) use conv::conv2d_backward;
pub(crate) use embedding::embedding_backward;
pub(crate) use layernorm::layernorm_backward;
pub(crate) use matmul::{matmul_backward, matmul_raw};
pub(crate) use movement::{concat_backward, inverse_permutation, slice_backward};
pub(crate) use pool::maxpool2d_backward;
pub(crate) use reduce::max_backward;
pub use shape::broadcast_shapes;
pub(crate) use softmax::{cross_entropy_backward, softmax_backward};
pub(crate) use unary::unary_backward;
pub use unary::Unary;

use crate::error::Result;
use crate::gpu::{Binding, Gpu, Kernel, PooledBuffer};
use crate::tensor::{gpu_output, Device, Storage, Tensor};
use std::rc::Rc;

/// Runs `kernel` reading `inputs` and writing fresh buffers of the given lengths (in 4-byte
/// elements); returns the output buffers.
pub(crate) fn launch(
    gpu: &Rc<Gpu>,
    kernel: &Kernel,
    params: &[u32],
    inputs: &[&Tensor],
    output_lens: &[usize],
    groups: [u32; 3],
) -> Result<Vec<PooledBuffer>> {
    let input_buffers = inputs
        .iter()
        .map(|t| t.buffer(kernel.entry))
        .collect::<Result<Vec<_>>>()?;
    let outputs = output_lens
        .iter()
        .map(|&n| gpu_output(gpu, n))
        .collect::<Result<Vec<_>>>()?;
    let mut bindings: Vec<Binding> = input_buffers.iter().map(Binding::read).collect();
    bindings.extend(outputs.iter().map(|b| Binding::write(b.buffer())));
    gpu.dispatch(kernel, params, &bindings, groups);
    Ok(outputs)
}

/// Like `launch` with one output, wrapped as GPU storage.
pub(crate) fn launch1(
    gpu: &Rc<Gpu>,
    kernel: &Kernel,
    params: &[u32],
    inputs: &[&Tensor],
    output_len: usize,
    groups: [u32; 3],
) -> Result<Storage> {
    let mut out = launch(gpu, kernel, params, inputs, &[output_len], groups)?;
    Ok(Storage::Gpu(out.remove(0)))
}

/// The bits of an f32, for kernel parameter lists.
pub(crate) fn f(v: f32) -> u32 {
    v.to_bits()
}

/// The GPU of a device, if it is one.
pub fn gpu_of(device: &Device) -> Option<&Rc<Gpu>> {
    match device {
        Device::Gpu(g) => Some(g),
        Device::Cpu => None,
    }
}

/// A row kernel (one output row per workgroup on real GPUs, per thread on emulated ones, see
/// shaders/rowwise.wgsl) and the workgroups that cover `rows` rows.
pub(crate) fn row_kernel(
    gpu: &Gpu,
    family: &'static str,
    source: &'static str,
    entry: &'static str,
    rows: usize,
) -> (Kernel, [u32; 3]) {
    row_kernel_mode(gpu.is_cpu_emulated(), gpu, family, source, entry, rows)
}

/// `row_kernel` with the mode chosen by the caller: serial (one thread per row) also suits
/// real GPUs when neighbouring rows are neighbouring in memory, as columns of a matrix are.
pub(crate) fn row_kernel_mode(
    serial: bool,
    gpu: &Gpu,
    family: &'static str,
    source: &'static str,
    entry: &'static str,
    rows: usize,
) -> (Kernel, [u32; 3]) {
    let kernel = Kernel::new(family, source, entry)
        .slot("ROWWISE", if serial { "serial" } else { "shared" })
        .slot("SCORES", if serial { "private" } else { "workgroup" });
    let groups = if serial {
        gpu.groups_1d(rows, 64)
    } else {
        gpu.groups_1d(rows, 1)
    };
    (kernel, groups)
}
