// LayerNorm's weight and bias gradients on real GPUs, in one pass over the rows:
// dw = sum over rows of g xh and db = sum of g, with xh = (x - mean) rstd rebuilt from the
// forward's stats. As in sum_columns.wgsl, a workgroup covers 64 neighbouring columns
// (coalesced reads) and one chunk of rows, shared by 4 lanes of threads; it writes one partial
// sum of each per column and chunk, [2, chunks, cols], which layernorm_params_finish.wgsl adds up.

struct Params { rows: u32, cols: u32, chunk: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> stats: array<f32>;
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read_write> partials: array<f32>;

const COLS: u32 = 64u;
const LANES: u32 = 4u;
var<workgroup> part_w: array<f32, 256>;
var<workgroup> part_b: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let col = wid.x * COLS + lid % COLS;
    let first = wid.y * p.chunk;
    let end = min(first + p.chunk, p.rows);
    var sw = 0.0;
    var sb = 0.0;
    if (col < p.cols) {
        for (var r = first + lid / COLS; r < end; r += LANES) {
            let gv = g[r * p.cols + col];
            sw += gv * (x[r * p.cols + col] - stats[2u * r]) * stats[2u * r + 1u];
            sb += gv;
        }
    }
    part_w[lid] = sw;
    part_b[lid] = sb;
    workgroupBarrier();
    if (lid < COLS && col < p.cols) {
        let w = part_w[lid] + part_w[lid + COLS] + part_w[lid + 2u * COLS] + part_w[lid + 3u * COLS];
        let b = part_b[lid] + part_b[lid + COLS] + part_b[lid + 2u * COLS] + part_b[lid + 3u * COLS];
        partials[wid.y * p.cols + col] = w;
        partials[(nwg.y + wid.y) * p.cols + col] = b;
    }
}
