//! The matmul for CPU-emulated adapters (shaders/matmul_regs.wgsl): each lane keeps ROWS × COLS
//! outputs in named vec4 registers, in a body the template unrolls.

use crate::gpu::Kernel;

/// The kernel's family, its dispatches counted under it.
pub(super) const FAMILY: &str = "matmul_regs";

/// Rows per lane: a workgroup's 8 lanes cover 8 × ROWS rows, up to 128 (on lavapipe, 16 × 16
/// tiles ran 2-3× faster than 8 × 4 on the tiny GPT's shapes; 32 × 16 compiled for seconds).
pub(crate) fn rows_per_lane(m: usize) -> usize {
    match m {
        0..=32 => 4,
        33..=64 => 8,
        _ => 16,
    }
}

/// The most columns of C a workgroup of this kernel computes: the fewest of any product kernel
/// (the tiled ones take 64 or 128), so a product has at most this many times the dispatch's
/// limit of workgroups' columns.
pub(crate) const MOST_COLS: usize = 16;

/// Columns per lane (a multiple of 4): as many as the output has, up to MOST_COLS.
pub(crate) fn cols_per_lane(n: usize) -> usize {
    match n {
        0..=7 => 4,
        8..=15 => 8,
        _ => MOST_COLS,
    }
}

/// The kernel for `rows` × `cols` outputs per lane, its body unrolled by the template's
/// `//#repeat` blocks.
pub(crate) fn kernel(rows: usize, cols: usize) -> Kernel {
    let source = include_str!("../../../shaders/matmul_regs.wgsl");
    Kernel::new(FAMILY, source, "main")
        .slot("ROWS", rows)
        .slot("COLS", cols)
        .slot("VECS", cols / 4)
}
