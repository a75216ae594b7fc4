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
    // Four chunks an iteration, in four sums, so that four loads are in flight: one at a time,
    // each waited for (and each iteration counted by the loop bound WGSL compilers add), took
    // 28.7 us a call on an H100, four take 13.5.
    var sums = vec4<f32>(0.0);
    var c = lane;
    if (col < p.cols) {
        for (; c + 3u * LANES < p.chunks; c += 4u * LANES) {
            sums += vec4<f32>(partials[base + c * p.cols], partials[base + (c + LANES) * p.cols],
                              partials[base + (c + 2u * LANES) * p.cols],
                              partials[base + (c + 3u * LANES) * p.cols]);
        }
        for (; c < p.chunks; c += LANES) {
            sums.x += partials[base + c * p.cols];
        }
    }
    part[lid] = (sums.x + sums.y) + (sums.z + sums.w);
    workgroupBarrier();
    // The lanes' sums halved four times (LANES = 16), written out: no loop to bound.
    //#repeat 4
    if (lane < (8u >> #u)) { part[lid] += part[lid + (8u >> #u) * COLS]; }
    workgroupBarrier();
    //#end
    if (lane == 0u && col < p.cols) {
        if (wid.y == 0u) { dw[col] = part[lid]; } else { db[col] = part[lid]; }
    }
}
