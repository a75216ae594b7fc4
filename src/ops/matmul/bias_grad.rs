//! A linear layer's weight and bias gradients from one product: dW = gᵀ · x, and db, the sums
//! of g's columns, which the tiled kernels take from the tiles of gᵀ they stage anyway (ROW_SUMS
//! in shaders/matmul.wgsl and matmul_small.wgsl) and store after dW. A column sum of its own
//! cost two dispatches per bias (48 a step in nanochar). K, the batch's rows, is cut into
//! chunks multiplied as one batch, as `matmul_split_k` does, and one pass sums the chunks' dW
//! and db together (none for one chunk).

use super::epilogue::Causal;
use super::layout::{Dims, Layout, Views};
use super::run::matmul_into;
use super::split::{target_groups, weight_grad_chunks};
use crate::error::Result;
use crate::ops::gpu_of;
use crate::tensor::{gpu_output, DType, Storage, Tensor};

/// Floats in 256 bytes, the offset alignment of a GPU binding: db starts at a multiple, so
/// that it can be bound where it lies.
const ALIGN: usize = 64;

/// [dW, db] of a linear layer from the gradient of its output g [rows, out] and its input
/// x [rows, in], on the tiled GPU kernels; None where they do not apply (the caller then
/// takes the product and the column sums apart).
pub(super) fn weight_and_bias_grads(g: &Tensor, x: &Tensor) -> Result<Option<[Tensor; 2]>> {
    let Some(gpu) = gpu_of(g.device()) else {
        return Ok(None);
    };
    if gpu.is_cpu_emulated() || g.rank() != 2 || x.rank() != 2 || g.shape()[0] != x.shape()[0] {
        return Ok(None);
    }
    let (k, m, n) = (g.shape()[0], g.shape()[1], x.shape()[1]);
    let target = target_groups(gpu.tuning().tiles_at_once);
    let Some(chunks) = weight_grad_chunks(k, (m, n), target) else {
        return Ok(None);
    };
    let rows = k / chunks;
    let sums_at = (m * n).next_multiple_of(ALIGN);
    let stride = sums_at + m.next_multiple_of(ALIGN);
    let d = Dims {
        m,
        n,
        k: rows,
        batches: chunks,
    };
    let views = Views {
        heads: 1,
        a: Layout::dense(m, rows * m, 1),
        b: Layout::dense(n, rows * n, 1),
        c: Layout::dense(n, stride, 1),
        row_sums: Some(sums_at),
    };
    let mut target = Storage::Gpu(gpu_output(gpu, chunks * stride)?);
    matmul_into(&mut target, [g, x], (d, views), (true, false), Causal::No)?;
    let mut both = Tensor::from_storage(vec![chunks, stride], DType::F32, g.device(), target);
    if chunks > 1 {
        both = both.sum(0, false)?;
    }
    Ok(Some([both.part(0, &[m, n]), both.part(sums_at, &[m])]))
}
