// What the blocked cross-entropy's two passes share (cross_entropy_partials.wgsl, then
// cross_entropy_blocks.wgsl; src/ops/linear_cross_entropy.rs): their parameters, and which
// row and which block of BLOCK columns of it a workgroup takes.

struct Params { rows: u32, cols: u32, blocks: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;

const THREADS: u32 = 256u;
const BLOCK: u32 = 4096u;

// (row, block) of a workgroup: workgroups run over the rows' blocks, row by row.
fn row_and_block(wid: vec3<u32>, nwg: vec3<u32>) -> vec2<u32> {
    let index = wid.x + wid.y * nwg.x;
    return vec2<u32>(index / p.blocks, index % p.blocks);
}
