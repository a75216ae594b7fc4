//! A linear layer's weight and bias gradients from one product: dW = gᵀ · x, and db, the sums
//! of g's columns, which the tiled kernels take from the tiles of gᵀ they stage anyway (ROW_SUMS
//! in shaders/matmul.wgsl and matmul_small.wgsl) and store after dW. A column sum of its own
//! cost two dispatches per bias (48 a step in nanochar). K, the batch's rows, is cut into
//! chunks multiplied as one batch, as `matmul_split_k` does, and one pass sums the chunks' dW
//! and db together (none for one chunk).

use super::gpu_of;
use super::matmul::{matmul_into, Dims};
use super::matmul_layout::{Layout, Views};
use super::matmul_plan::{Causal, BIG_TILES_FROM};
use super::matmul_split::long_k_chunks;
use crate::error::Result;
use crate::tensor::{gpu_output, DType, Storage, Tensor};

/// Floats in 256 bytes, the offset alignment of a GPU binding: db starts at a multiple, so
/// that it can be bound where it lies.
const ALIGN: usize = 64;
/// Workgroups of 64 × 64 tiles that the chunks aim for, as matmul_split.rs's `Split::of`.
const TARGET_GROUPS: usize = 256;
/// The fewest rows in a chunk: one slice of the kernels' staging.
const CHUNK_ROWS: usize = 16;
/// A K of at most this many rows is not cut: the 64 × 64 tiles walk it in eight slices or
/// fewer, where cut it took a pass of its own to sum the chunks (the mlp's three weight
/// gradients over its batch of 128: three dispatches a step, each costing the page CPU).
const UNCUT_ROWS_AT_MOST: usize = 128;

/// How many chunks K is cut into for an m × n gradient, or None for outputs of enough
/// 128 × 128 tiles to fill the GPU alone (they balance their rounds by splitting K inside the
/// kernel instead). A long K is cut as `matmul_split_k` cuts it where its 128 × 128 tiles
/// then fill the GPU (nanochar); a short K (`UNCUT_ROWS_AT_MOST`) not at all; else into the
/// fewest chunks of CHUNK_ROWS or more that fill it with 128 × 128 tiles, or failing that with
/// 64 × 64 tiles, or failing that the most.
/// Fewer, longer chunks on 64 × 64 tiles made gpt_small's step 19 % slower on an H100.
fn chunks(k: usize, (m, n): (usize, usize)) -> Option<usize> {
    let big_tiles = m.div_ceil(128) * n.div_ceil(128);
    if big_tiles >= BIG_TILES_FROM {
        return None;
    }
    if k <= UNCUT_ROWS_AT_MOST {
        return Some(1);
    }
    let cut = |s: usize, rows: usize| k.is_multiple_of(s) && k / s >= rows;
    if let Some(s) = long_k_chunks(k).filter(|&s| big_tiles * s >= BIG_TILES_FROM) {
        return Some(s);
    }
    let cuts: Vec<usize> = [1, 2, 4, 8, 16, 32]
        .into_iter()
        .filter(|&s| cut(s, CHUNK_ROWS))
        .collect();
    let small_tiles = m.div_ceil(64) * n.div_ceil(64);
    let filling = |tiles: usize, enough: usize| cuts.iter().copied().find(|s| tiles * s >= enough);
    let chunks = filling(big_tiles, BIG_TILES_FROM)
        .or_else(|| filling(small_tiles, TARGET_GROUPS))
        .or(cuts.last().copied());
    Some(chunks.unwrap_or(1))
}

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
    let Some(chunks) = chunks(k, (m, n)) else {
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
