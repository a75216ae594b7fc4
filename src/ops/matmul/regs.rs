//! The matmul for CPU-emulated adapters (shaders/matmul_regs.wgsl): each lane keeps ROWS × COLS
//! outputs in named vec4 registers, in a body unrolled here.

use crate::gpu::Kernel;
use crate::ops::generated_source;

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

/// Columns per lane (a multiple of 4): as many as the output has, up to 16.
pub(crate) fn cols_per_lane(n: usize) -> usize {
    match n {
        0..=7 => 4,
        8..=15 => 8,
        _ => 16,
    }
}

/// The kernel for `rows` × `cols` outputs per lane.
pub(crate) fn kernel(rows: usize, cols: usize) -> Kernel {
    let source = generated_source(FAMILY, [rows, cols], || source(rows, cols));
    Kernel::new(FAMILY, source, "main")
        .slot("ROWS", rows)
        .slot("COLS", cols)
}

/// The shader with its body unrolled: arrays indexed in loops would live in memory.
fn source(rows: usize, cols: usize) -> String {
    let vecs = cols / 4;
    let mut declare = String::new();
    let mut step = String::new();
    let mut store = String::new();
    for i in 0..rows {
        declare += &format!("    let r{i} = min(row0 + {}u, last_row);\n", 8 * i);
        step += &format!("        let av{i} = vec4<f32>(a_at(a_base, r{i}, kk));\n");
    }
    for j in 0..vecs {
        step += &format!("        let bv{j} = b4(b_base, kk, col0 + {}u);\n", 4 * j);
    }
    for i in 0..rows {
        for j in 0..vecs {
            declare += &format!("    var acc{i}_{j} = vec4<f32>(0.0);\n");
            step += &format!("        acc{i}_{j} = fma(av{i}, bv{j}, acc{i}_{j});\n");
            store += &format!(
                "    store(c_base, row0 + {}u, col0 + {}u, acc{i}_{j});\n",
                8 * i,
                4 * j
            );
        }
    }
    include_str!("../../../shaders/matmul_regs.wgsl")
        .replace("{{DECLARE}}", &declare)
        .replace("{{STEP}}", &step)
        .replace("{{STORE}}", &store)
}
