//! The second pass of a product whose K was split (split.rs): the chunks' partial products
//! summed into C with the epilogue's bias and residual, through ReLU or its derivative
//! (shaders/matmul_split_sum.wgsl).

use super::epilogue::Epilogue;
use super::layout::Dims;
use super::split::Split;
use crate::error::Result;
use crate::gpu::{Kernel, PooledBuffer};
use crate::ops::{gpu_of, launch1, vec4_buffers};
use crate::tensor::{DType, Storage, Tensor};

crate::kernel_params! {
    /// shaders/matmul_split_sum.wgsl: C's rows and columns, the chunks per batch, C's length,
    /// columns and length counted in the kernel's elements (values, or vec4s).
    struct SplitSumParams { m: u32, n: u32, parts: u32, len: u32 }
}

/// C from the partial products `parts` of `d` split as `split`, with the epilogue's bias and
/// residual, through ReLU, or kept where a ReLU's output is positive (`relu_grad`). The plan
/// splits no product with another epilogue.
pub(super) fn sum(
    parts: PooledBuffer,
    like: &Tensor,
    d: Dims,
    split: Split,
    epilogue: &Epilogue,
) -> Result<Storage> {
    let Epilogue { bias, relu, .. } = *epilogue;
    // ReLU's output for its derivative is read where a residual would be.
    let residual = epilogue.residual.or(epilogue.relu_grad);
    let gpu = gpu_of(like.device()).expect("split only on a GPU");
    let len = d.batches * d.m * d.n;
    let parts = Tensor::from_storage(
        vec![split.parts * len],
        DType::F32,
        like.device(),
        Storage::Gpu(parts),
    );
    // What is not there is bound as the partials again, never read.
    let inputs = [&parts, bias.unwrap_or(&parts), residual.unwrap_or(&parts)];
    // A vec4 at a time where C's rows run in fours and every buffer binds whole vec4s.
    let (width, elem) = if d.n.is_multiple_of(4) && vec4_buffers(&inputs, "matmul")? {
        (4, "vec4<f32>")
    } else {
        (1, "f32")
    };
    let kernel = Kernel::new(
        "matmul_split_sum",
        include_str!("../../../shaders/matmul_split_sum.wgsl"),
        "main",
    )
    .slot("ELEM", elem)
    .constant("HAS_BIAS", bias.is_some())
    .constant("HAS_RESIDUAL", epilogue.residual.is_some())
    .constant("RELU", relu)
    .constant("RELU_GRAD", epilogue.relu_grad.is_some());
    let params = SplitSumParams {
        m: d.m as u32,
        n: (d.n / width) as u32,
        parts: split.parts as u32,
        len: (len / width) as u32,
    };
    launch1(
        gpu,
        &kernel,
        &params,
        &inputs,
        len,
        gpu.groups_elementwise(len / width),
    )
}
