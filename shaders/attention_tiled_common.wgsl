// What the tiled attention kernels share: their parameters and tile sizes. D4 is the
// head's width in vec4s; lines holding `$` are repeated for each of them by
// src/ops/attention_tiled.rs, since arrays indexed in loops would live in memory.

struct Params { batch: u32, t: u32, c: u32, heads: u32, d: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;

// Rows (queries or keys) per workgroup, a thread each, and rows per staged block (chosen by
// src/ops/attention_tiled.rs).
const ROWS: u32 = 64u;
const BLOCK: u32 = {{BLOCK}}u;
const D4: u32 = {{D4}}u;
