// Sum along the middle axis of [outer, n, inner] for real GPUs when rows are wide (inner >= 64):
// bias and LayerNorm gradients, whose columns are thousands of rows long. A workgroup covers 64
// neighbouring columns (coalesced reads) and one chunk of rows, shared by 4 lanes of threads that
// keep four sums each so that loads overlap; it writes one partial sum per column and chunk,
// [outer, chunks, inner]. With one chunk that is the answer; otherwise the partials are summed
// by a second dispatch of this kernel.

struct Params { outer: u32, n: u32, inner: u32, chunk: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

const COLS: u32 = 64u;
const LANES: u32 = 4u;
const THREADS: u32 = COLS * LANES;
var<workgroup> part: array<f32, THREADS>;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let col = wid.x * COLS + lid % COLS;
    let lane = lid / COLS;
    let o = wid.z;
    let first = wid.y * p.chunk;
    let end = min(first + p.chunk, p.n);
    var sums = vec4<f32>(0.0);
    if (col < p.inner) {
        let base = o * p.n * p.inner + col;
        var j = first + lane;
        for (; j + 3u * LANES < end; j += 4u * LANES) {
            sums += vec4<f32>(xs[base + j * p.inner], xs[base + (j + LANES) * p.inner],
                              xs[base + (j + 2u * LANES) * p.inner],
                              xs[base + (j + 3u * LANES) * p.inner]);
        }
        for (; j < end; j += LANES) { sums.x += xs[base + j * p.inner]; }
    }
    part[lid] = (sums.x + sums.y) + (sums.z + sums.w);
    workgroupBarrier();
    if (lane == 0u && col < p.inner) {
        let total = part[lid] + part[lid + COLS] + part[lid + 2u * COLS] + part[lid + 3u * COLS];
        out[(o * nwg.y + wid.y) * p.inner + col] = total;
    }
}
