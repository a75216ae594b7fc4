//! Split-K for products with a small output and a long shared dimension (a linear layer over a
//! batch of 128 rows: 2 to 16 tiles of 64 × 64 for 132 SMs; matmul_1024: 64 tiles of 128): K is
//! cut into chunks that separate workgroups multiply at once (shaders/matmul_small.wgsl and
//! matmul.wgsl, one chunk each), and a
//! second pass sums the chunks' partial products with the bias and the residual
//! (shaders/matmul_split_sum.wgsl). Unsplit, a few workgroups walk all of K in turn while the
//! rest of the GPU idles.

use super::matmul::Dims;
use super::matmul_plan::{vec4_buffers, Epilogue};
use super::{gpu_of, launch1};
use crate::error::Result;
use crate::gpu::{Kernel, PooledBuffer, Tuning};
use crate::tensor::{DType, Storage, Tensor};

/// Workgroups a split product aims for: about two per SM of a large GPU.
const TARGET_GROUPS: usize = 256;
/// Depth of matmul_small.wgsl's slices: chunks are whole slices.
const DEPTH: usize = 16;
/// The large tiles a GPU runs at once, that their rounds are balanced for: natively one on each
/// of an H100's or H200's 132 multiprocessors, so 192 tiles take two rounds, the second under
/// half full. Chrome's build of the kernel runs two on each (docs/BENCHMARKS.md, "How many
/// weight-gradient workgroups Chrome runs at once"): 384 tiles there fill a round and a half.
/// Assumed, not known: the adapter does not say how many units it has, so on another GPU the
/// balancing may split K where it need not (the sums stay right; only time is at stake).
fn tiles_at_once(tuning: Tuning) -> usize {
    match tuning.in_browser() {
        true => 264,
        false => 132,
    }
}

/// How K is cut: chunks of `k_chunk` (a multiple of the slice depth), `parts` of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Split {
    pub(super) k_chunk: usize,
    pub(super) parts: usize,
}

impl Split {
    /// All of K in one chunk.
    pub(super) fn whole(k: usize) -> Split {
        Split {
            k_chunk: k.max(1),
            parts: 1,
        }
    }

    /// The split for the 64 × 64 tiles of `d`: none while the tiles fill a quarter of the
    /// target or K is a few slices; else as many chunks (of one slice or more) as bring the
    /// workgroups to about the target. The partial products then hold at most
    /// TARGET_GROUPS × 64 × 64 values.
    pub(super) fn of(d: Dims) -> Split {
        let tiles = d.m.div_ceil(64) * d.n.div_ceil(64) * d.batches;
        let slices = d.k.div_ceil(DEPTH);
        if tiles == 0 || tiles >= TARGET_GROUPS / 4 || slices < 8 {
            return Split::whole(d.k);
        }
        let wanted = (TARGET_GROUPS / tiles).min(slices);
        Split::chunks_of(d.k, slices.div_ceil(wanted) * DEPTH)
    }

    /// The split for 128 × 128 tiles (matmul.wgsl): none below a quarter of `enough` tiles
    /// (the 64 × 64 tiles fill the GPU better) or for K under 512. Below `enough`, chunks of
    /// at least 256 that bring the workgroups to about twice `enough`; from there, the parts
    /// that balance the rounds of workgroups (`balancing_parts`).
    pub(super) fn of_big(d: Dims, enough: usize, tuning: Tuning) -> Split {
        let tiles = d.m.div_ceil(128) * d.n.div_ceil(128) * d.batches;
        if tiles < enough / 4 || d.k < 512 {
            return Split::whole(d.k);
        }
        let parts = if tiles < enough {
            (2 * enough / tiles).min(d.k / 256).max(1)
        } else {
            balancing_parts(tiles, d.k, tiles_at_once(tuning))
        };
        if parts == 1 {
            return Split::whole(d.k);
        }
        Split::chunks_of(d.k, d.k.div_ceil(parts).div_ceil(DEPTH) * DEPTH)
    }

    /// K in chunks of `k_chunk`, the last one short.
    fn chunks_of(k: usize, k_chunk: usize) -> Split {
        Split {
            k_chunk,
            parts: k.div_ceil(k_chunk),
        }
    }
}

/// Parts (1 to 4, chunks of 256 or more) to cut K into so that `tiles` large tiles fill their
/// rounds of `at_once` best: the fewest with the fewest rounds a part, if that saves a tenth or
/// more. Natively GPT-2's input gradients (192 tiles) take two parts, its weight gradients (144
/// tiles) four; in Chrome nanochar's products of 384 tiles over a K of 1,152 or 1,536 two (its
/// page step 35.87 → 35.40 ms on an H200). From four rounds on, the last one's idle share is
/// small.
fn balancing_parts(tiles: usize, k: usize, at_once: usize) -> usize {
    if tiles >= 4 * at_once {
        return 1;
    }
    let rounds = |parts: usize| (tiles * parts).div_ceil(at_once) as f64 / parts as f64;
    let best = (1..=4)
        .filter(|&parts| k / parts >= 256)
        .min_by(|a, b| rounds(*a).total_cmp(&rounds(*b)))
        .unwrap_or(1);
    if rounds(best) <= 0.9 * rounds(1) {
        best
    } else {
        1
    }
}

/// How many chunks a long K (a weight gradient's rows) is cut into to be multiplied as one
/// batch: 32, 16, 8 or 4, the most that keep 512 rows or more each; None for a shorter K.
/// Both `matmul_split_k` and the weight-and-bias gradients (matmul_bias_grad.rs) cut so.
pub(super) fn long_k_chunks(k: usize) -> Option<usize> {
    [32, 16, 8, 4]
        .into_iter()
        .find(|&s| k.is_multiple_of(s) && k / s >= 512)
}

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
        include_str!("../../shaders/matmul_split_sum.wgsl"),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The large tiles' split natively (132 tiles at once), with enough at 128 tiles.
    fn native_big(m: usize, n: usize, k: usize) -> Split {
        let native = Tuning {
            compiler: crate::gpu::Compiler::Native,
        };
        Split::of_big(dims(m, n, k), 128, native)
    }

    fn dims(m: usize, n: usize, k: usize) -> Dims {
        Dims {
            m,
            n,
            k,
            batches: 1,
        }
    }

    #[test]
    fn few_tiles_over_a_long_k_are_split_into_whole_slices() {
        // A linear layer of 784 inputs into 64 for 128 rows: 2 tiles, 49 slices.
        let s = Split::of(dims(128, 64, 784));
        assert_eq!(
            s,
            Split {
                k_chunk: 16,
                parts: 49
            }
        );
        // 784 into 512: 16 tiles, 16 chunks of 4 slices (the last one short).
        let s = Split::of(dims(128, 512, 784));
        assert_eq!((s.k_chunk, s.parts), (64, 13));
        // Enough tiles, or a short K: one chunk.
        assert_eq!(Split::of(dims(4096, 1024, 784)).parts, 1);
        assert_eq!(Split::of(dims(128, 64, 100)).parts, 1);
        assert_eq!(Split::of(dims(0, 64, 784)), Split::whole(784));
    }

    #[test]
    fn a_mid_sized_product_splits_its_large_tiles_into_chunks_of_256_or_more() {
        // 1024 × 1024 × 1024: 64 tiles of 128, four chunks of 256.
        let s = native_big(1024, 1024, 1024);
        assert_eq!(
            s,
            Split {
                k_chunk: 256,
                parts: 4
            }
        );
        // 40 tiles over K = 600: two chunks (304 and 296).
        assert_eq!(
            native_big(640, 1024, 600),
            Split {
                k_chunk: 304,
                parts: 2
            }
        );
        // Enough tiles, too few, or a short K: one chunk.
        for (m, n, k) in [(2048, 2048, 1024), (256, 256, 1024), (1024, 1024, 300)] {
            assert_eq!(native_big(m, n, k).parts, 1, "{m}x{n}x{k}");
        }
    }

    #[test]
    fn tiles_that_would_leave_a_round_mostly_idle_are_split_to_balance_it() {
        // 192 tiles (GPT-2's input gradients): 2 rounds of 132 unsplit, 3 of 2 parts.
        assert_eq!(
            native_big(4096, 768, 3072),
            Split {
                k_chunk: 1536,
                parts: 2
            }
        );
        // 144 tiles (its weight gradients): 5 rounds of 4 parts instead of 2 of 1.
        assert_eq!(native_big(768, 3072, 4096).parts, 4);
        // 384 tiles fill 3 rounds and 1024 tiles 8, wasting little; K under 512 stays whole.
        for (m, n, k) in [(16384, 384, 1536), (4096, 4096, 4096), (4096, 768, 400)] {
            assert_eq!(native_big(m, n, k).parts, 1, "{m}x{n}x{k}");
        }
    }

    #[test]
    fn two_tiles_a_multiprocessor_balance_their_rounds_otherwise() {
        // Chrome's 264 at once: 384 tiles take 2 rounds whole, 1.5 a part in two parts; with
        // 132 at once 3 either way. A K of 384 cannot be cut into chunks of 256.
        assert_eq!(balancing_parts(384, 1536, 264), 2);
        assert_eq!(balancing_parts(384, 1152, 264), 2);
        assert_eq!(balancing_parts(384, 1536, 132), 1);
        assert_eq!(balancing_parts(384, 384, 264), 1);
        // 1,152 tiles (four rounds and more) stay whole.
        assert_eq!(balancing_parts(1152, 1536, 264), 1);
    }
}
