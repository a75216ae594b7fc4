// What the tiled attention kernels share: their parameters, tile sizes and a helper. D4 is the
// head's width in vec4s; lines holding `$` are repeated for each of them by
// src/ops/attention_tiled.rs, since arrays indexed in loops would live in memory.

struct Params { batch: u32, t: u32, c: u32, heads: u32, d: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;

// Rows (queries or keys) per workgroup, a thread each, and rows per staged block.
const ROWS: u32 = 64u;
const BLOCK: u32 = 32u;
const D4: u32 = {{D4}}u;

// The four sums of four vectors' components: products are summed per component first, so that
// a score is four short chains of additions rather than one long one.
fn sums(x: vec4<f32>, y: vec4<f32>, z: vec4<f32>, w: vec4<f32>) -> vec4<f32> {
    let one = vec4<f32>(1.0);
    return vec4<f32>(dot(x, one), dot(y, one), dot(z, one), dot(w, one));
}
