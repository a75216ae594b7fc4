// What the tiled attention kernels share: their parameters and tile sizes. D4 is the
// head's width in vec4s; a kernel's lines for each of them are `//#repeat {{D4}}` blocks
// (`#` the vec4's index), since arrays indexed in loops would live in memory.
//#slots BLOCK D4

// The inputs q, k and v may be columns of one packed [B, T, 3C] tensor: their rows are
// `stride4` vec4s apart and start `*_off4` vec4s in. The output and dO are [B, T, C]; the
// gradients of q, k and v are laid out as q, k and v are.
struct Params {
    batch: u32, t: u32, c: u32, heads: u32, d: u32, scale: f32,
    stride4: u32, q_off4: u32, k_off4: u32, v_off4: u32,
}
@group(0) @binding(0) var<uniform> p: Params;

// Rows (queries or keys) per workgroup, a thread each, and rows per staged block (chosen by
// src/ops/attention_tiled.rs).
const ROWS: u32 = 64u;
const BLOCK: u32 = {{BLOCK}}u;
const D4: u32 = {{D4}}u;

// Where head h of position i in batch b starts, in vec4s: in an input whose columns start at
// `off`, and in a [B, T, C] tensor. Positions past the end are clamped to the last.
fn in_at(b: u32, i: u32, h: u32, off: u32) -> u32 {
    return (b * p.t + min(i, p.t - 1u)) * p.stride4 + off + h * D4;
}

fn out_at(b: u32, i: u32, h: u32) -> u32 {
    return (b * p.t + min(i, p.t - 1u)) * (p.c / 4u) + h * D4;
}
