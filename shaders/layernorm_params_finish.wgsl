// Adds up layernorm_backward_fused.wgsl's partial sums [2, chunks, cols] into dw and db. A
// workgroup takes 16 neighbouring columns of one of the two (wid.y: 0 for dw, 1 for db), its 16
// lanes of 16 threads each summing every 16th chunk; the lanes' sums meet in workgroup memory.
// (A thread per column looping over 1024 chunks left the GPU idle: 0.24 ms per call.)

struct Params { cols: u32, chunks: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> dw: array<f32>;
@group(0) @binding(3) var<storage, read_write> db: array<f32>;

const COLS: u32 = 16u;
const LANES: u32 = 16u;
const THREADS: u32 = COLS * LANES;
var<workgroup> part: array<f32, THREADS>;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let col = wid.x * COLS + lid % COLS;
    let lane = lid / COLS;
    let base = wid.y * p.chunks * p.cols + col;
    var sum = 0.0;
    if (col < p.cols) {
        for (var c = lane; c < p.chunks; c += LANES) {
            sum += partials[base + c * p.cols];
        }
    }
    part[lid] = sum;
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s = s / 2u) {
        if (lane < s) { part[lid] += part[lid + s * COLS]; }
        workgroupBarrier();
    }
    if (lane == 0u && col < p.cols) {
        if (wid.y == 0u) { dw[col] = part[lid]; } else { db[col] = part[lid]; }
    }
}
