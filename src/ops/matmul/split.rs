//! How a product's shared dimension K is cut so that more workgroups share it, every rule in one
//! place. A product with a small output and a long K (a linear layer over a batch of 128 rows:
//! 2 to 16 tiles of 64 × 64) leaves most of a GPU idle while a few workgroups walk all of K:
//! cut into chunks, separate workgroups multiply them at once (shaders/matmul_small.wgsl,
//! matmul.wgsl and the matrix units' kernels, one chunk each) and a second pass sums their
//! partial products with the epilogue (split_sum.rs). Weight gradients, whose K is the batch's
//! rows, are cut as a batch of products instead (`long_k_chunks`, `weight_grad_chunks`). Every
//! rule here is pure: it reads the sizes and the device's `Tuning`, and the planner's table test
//! checks it.

use super::layout::Dims;
use super::plan::BIG_TILES_FROM;

/// The most workgroups of 64 × 64 tiles a split product aims for: its partial products then
/// hold at most this many tiles (4 MiB) for the summing pass.
const MOST_TARGET_GROUPS: usize = 256;

/// Workgroups of 64 × 64 tiles a split product aims for on a GPU that runs `at_once` large
/// tiles at once: two for each (a small tile needs less of a unit than a large one), at most
/// MOST_TARGET_GROUPS, which an H100 or H200 reaches; the most where the size was not
/// measured. A 24-unit GPU aims for 48: splitting for 256 would cut K five times as finely for
/// workgroups it cannot run at once, and sum them after.
pub(super) fn target_groups(at_once: Option<usize>) -> usize {
    at_once.map_or(MOST_TARGET_GROUPS, |n| (2 * n).clamp(1, MOST_TARGET_GROUPS))
}
/// Depth of the tiled kernels' slices: chunks are whole slices.
const DEPTH: usize = 16;
/// Depth of the matrix units' kernels' deep slices (shaders/matmul_f16_deep.wgsl's DEPTH), a
/// multiple of the shallow ones': chunks of it suit both.
const MATRIX_DEPTH: usize = 64;
/// The most parts the matrix units' K is cut into: their partial products, [parts, m, n] in
/// f32, are memory the step holds for a moment (GPT-2's output layer's input gradient in 8
/// parts: 12.6 MB, which a free buffer of the step's activations can lend).
const MOST_MATRIX_PARTS: usize = 8;
/// The shortest K the large tiles split, and the shortest chunk they split it into.
const BIG_CHUNK: usize = 256;
/// The most parts a large-tile product's K is cut into to balance its rounds.
const MOST_BALANCING_PARTS: usize = 4;
/// The fewest slices a 64 × 64 tiles' K must have to be split.
const FEWEST_SLICES_TO_SPLIT: usize = 8;
/// A weight gradient's chunks have at least this many rows when cut as a batch
/// (`long_k_chunks`).
const LONG_CHUNK_ROWS: usize = 512;
/// A K of at most this many rows is not cut for a weight-and-bias gradient: the 64 × 64 tiles
/// walk it in eight slices or fewer, where cut it took a pass of its own to sum the chunks
/// (the mlp's three weight gradients over its batch of 128: three dispatches a step, each
/// costing the page CPU).
const UNCUT_ROWS_AT_MOST: usize = 128;

/// How K is cut: chunks of `k_chunk` (a multiple of the slice depth), `parts` of them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Split {
    pub(crate) k_chunk: usize,
    pub(crate) parts: usize,
}

impl Split {
    /// All of K in one chunk.
    pub(super) fn whole(k: usize) -> Split {
        Split {
            k_chunk: k.max(1),
            parts: 1,
        }
    }

    /// The split for the 64 × 64 tiles of `d`, aiming for `target` workgroups
    /// (`target_groups`): none while the tiles fill a quarter of the target or K is a few
    /// slices; else as many chunks (of one slice or more) as bring the workgroups to about the
    /// target.
    pub(super) fn of(d: Dims, target: usize) -> Split {
        let tiles = d.m.div_ceil(64) * d.n.div_ceil(64) * d.batches;
        let slices = d.k.div_ceil(DEPTH);
        if tiles == 0 || tiles >= target / 4 || slices < FEWEST_SLICES_TO_SPLIT {
            return Split::whole(d.k);
        }
        let wanted = (target / tiles).clamp(1, slices);
        Split::chunks_of(d.k, slices.div_ceil(wanted) * DEPTH)
    }

    /// The split for 128 × 128 tiles (matmul.wgsl) on a GPU that runs `at_once` of them at
    /// once: none on a GPU whose size was not measured (None), below a quarter of
    /// BIG_TILES_FROM tiles (the 64 × 64 tiles fill the GPU better) or for K under twice
    /// BIG_CHUNK. Below a round, chunks of at least BIG_CHUNK that bring the workgroups to about
    /// two rounds; from there, the parts that balance the rounds (`balancing_parts`).
    pub(super) fn of_big(d: Dims, at_once: Option<usize>) -> Split {
        let tiles = d.large_tiles();
        let Some(at_once) = at_once.filter(|&n| n > 0) else {
            return Split::whole(d.k);
        };
        if tiles < BIG_TILES_FROM / 4 || d.k < 2 * BIG_CHUNK {
            return Split::whole(d.k);
        }
        let parts = if tiles < at_once {
            (2 * at_once / tiles).min(d.k / BIG_CHUNK).max(1)
        } else {
            balancing_parts(tiles, d.k, at_once)
        };
        if parts == 1 {
            return Split::whole(d.k);
        }
        Split::in_parts(d.k, parts)
    }

    /// K in `parts` chunks of whole slices (or fewer, where K has fewer slices), the last one
    /// short.
    pub(super) fn in_parts(k: usize, parts: usize) -> Split {
        Split::in_parts_of(k, parts, DEPTH)
    }

    /// `in_parts` for the matrix units' kernels, whose slices are MATRIX_DEPTH deep.
    pub(super) fn in_matrix_parts(k: usize, parts: usize) -> Split {
        Split::in_parts_of(k, parts, MATRIX_DEPTH)
    }

    fn in_parts_of(k: usize, parts: usize, depth: usize) -> Split {
        if parts <= 1 || k == 0 {
            return Split::whole(k);
        }
        Split::chunks_of(k, k.div_ceil(parts).div_ceil(depth) * depth)
    }

    /// The split for the matrix units' 128 × 128 tiles on a GPU that runs `at_once` large
    /// tiles at once: where the tiles fill at most a quarter of it and K is at least twice
    /// BIG_CHUNK, chunks of at least BIG_CHUNK, at most MOST_MATRIX_PARTS of them, towards two
    /// rounds of workgroups (GPT-2's output layer's input gradient, 512 × 768 over 50,304: 24
    /// tiles, each walking all of K without it); none where the GPU's size was not measured.
    /// Unlike `of_big`, it splits however few the tiles (`of_big` leaves those to the 64 × 64
    /// kernel, which has no matrix units). Split wherever the tiles were fewer than the GPU
    /// runs, GPT-2's fine-tuning in the page was as fast but held 694-741 MB at its peaks
    /// instead of 672 (H200, one call): the partial products of its 96-tile products.
    pub(super) fn of_matrix_units(d: Dims, at_once: Option<usize>) -> Split {
        let tiles = d.large_tiles();
        let Some(at_once) = at_once.filter(|&n| n > 0) else {
            return Split::whole(d.k);
        };
        if tiles == 0 || tiles > at_once / 4 || d.k < 2 * BIG_CHUNK {
            return Split::whole(d.k);
        }
        let parts = (2 * at_once / tiles)
            .min(d.k / BIG_CHUNK)
            .min(MOST_MATRIX_PARTS);
        Split::in_matrix_parts(d.k, parts)
    }

    /// K in chunks of `k_chunk`, the last one short.
    fn chunks_of(k: usize, k_chunk: usize) -> Split {
        Split {
            k_chunk,
            parts: k.div_ceil(k_chunk),
        }
    }
}

/// Parts (1 to MOST_BALANCING_PARTS, chunks of BIG_CHUNK or more) to cut K into so that
/// `tiles` large tiles fill their rounds of `at_once` best: the fewest with the fewest rounds a
/// part, if that saves a tenth or more. Natively GPT-2's input gradients (192 tiles) take two
/// parts, its weight gradients (144 tiles) four; in Chrome nanochar's products of 384 tiles over
/// a K of 1,152 or 1,536 two (its page step 35.87 → 35.40 ms on an H200). From four rounds on,
/// the last one's idle share is small.
fn balancing_parts(tiles: usize, k: usize, at_once: usize) -> usize {
    if rounds_balance_themselves(tiles, at_once) {
        return 1;
    }
    let rounds = |parts: usize| (tiles * parts).div_ceil(at_once) as f64 / parts as f64;
    let best = parts_of_big_chunks(k)
        .min_by(|a, b| rounds(*a).total_cmp(&rounds(*b)))
        .unwrap_or(1);
    if rounds(best) <= 0.9 * rounds(1) {
        best
    } else {
        1
    }
}

/// The parts besides one that a large-tile product's K may be cut into to balance its rounds,
/// each at least BIG_CHUNK long: the variants the measurement tries (src/tune/products.rs).
/// None where the rounds balance themselves (`rounds_balance_themselves`: four or more of
/// `tiles` on a GPU running `at_once`), where a cut only adds its partial products, parts times
/// the output, to the memory the timing holds (GPT-2's chunk of logits, 103 MB, timed in two
/// and three parts).
pub(super) fn balancing_parts_to_try(
    k: usize,
    tiles: usize,
    at_once: Option<usize>,
) -> impl Iterator<Item = usize> {
    let balanced = at_once.is_some_and(|n| rounds_balance_themselves(tiles, n));
    parts_of_big_chunks(k).filter(move |&parts| parts > 1 && !balanced)
}

/// Whether `tiles` make four rounds or more of a GPU running `at_once`: the last round's idle
/// share is then small, and no cut of K balances them better.
fn rounds_balance_themselves(tiles: usize, at_once: usize) -> bool {
    tiles >= 4 * at_once
}

/// The parts, 1 to MOST_BALANCING_PARTS, that cut K into chunks of at least BIG_CHUNK.
fn parts_of_big_chunks(k: usize) -> impl Iterator<Item = usize> {
    (1..=MOST_BALANCING_PARTS).filter(move |&parts| k / parts >= BIG_CHUNK)
}

/// How many chunks a long K (a weight gradient's rows) is cut into to be multiplied as one
/// batch: 32, 16, 8 or 4, the most that keep LONG_CHUNK_ROWS or more each; None for a shorter
/// K. Both `matmul_split_k` and the weight-and-bias gradients (bias_grad.rs) cut so.
pub(super) fn long_k_chunks(k: usize) -> Option<usize> {
    [32, 16, 8, 4]
        .into_iter()
        .find(|&s| k.is_multiple_of(s) && k / s >= LONG_CHUNK_ROWS)
}

/// How many chunks K is cut into for an m × n weight-and-bias gradient (bias_grad.rs), or None
/// for outputs of enough 128 × 128 tiles to fill the GPU alone (they balance their rounds by
/// splitting K inside the kernel instead). A long K is cut as `long_k_chunks` cuts it where
/// its 128 × 128 tiles then fill the GPU (nanochar); a short K (`UNCUT_ROWS_AT_MOST`) not at
/// all; else into the fewest chunks of a slice or more that fill it with 128 × 128 tiles, or
/// failing that with 64 × 64 tiles (`target` of them, `target_groups`), or failing that the
/// most. Fewer, longer chunks on 64 × 64 tiles made gpt_small's step 19 % slower on an H100.
pub(super) fn weight_grad_chunks(k: usize, (m, n): (usize, usize), target: usize) -> Option<usize> {
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
        .filter(|&s| cut(s, DEPTH))
        .collect();
    let small_tiles = m.div_ceil(64) * n.div_ceil(64);
    let filling = |tiles: usize, enough: usize| cuts.iter().copied().find(|s| tiles * s >= enough);
    let chunks = filling(big_tiles, BIG_TILES_FROM)
        .or_else(|| filling(small_tiles, target))
        .or(cuts.last().copied());
    Some(chunks.unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The large tiles' split on a GPU that runs 132 at once.
    fn native_big(m: usize, n: usize, k: usize) -> Split {
        Split::of_big(dims(m, n, k), Some(132))
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
        let s = Split::of(dims(128, 64, 784), 256);
        assert_eq!(
            s,
            Split {
                k_chunk: 16,
                parts: 49
            }
        );
        // 784 into 512: 16 tiles, 16 chunks of 4 slices (the last one short).
        let s = Split::of(dims(128, 512, 784), 256);
        assert_eq!((s.k_chunk, s.parts), (64, 13));
        // Enough tiles, or a short K: one chunk.
        assert_eq!(Split::of(dims(4096, 1024, 784), 256).parts, 1);
        assert_eq!(Split::of(dims(128, 64, 100), 256).parts, 1);
        assert_eq!(Split::of(dims(0, 64, 784), 256), Split::whole(784));
        // A GPU measured to run 24 large tiles at once aims for 48 workgroups: 17 chunks of
        // 3 slices; one of 132 or 256 for the most.
        assert_eq!(target_groups(Some(24)), 48);
        assert_eq!(Split::of(dims(128, 64, 784), 48).parts, 17);
        assert_eq!(
            (target_groups(Some(132)), target_groups(Some(256))),
            (256, 256)
        );
        assert_eq!(target_groups(None), 256);
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
