// Causal softmax of attention scores, per row of a [batches, T, T] tensor: row i of each T×T
// block keeps keys j ≤ i, scaled by `scale` before the stable softmax; the masked future is
// written as zeros, so the products after it need no mask.

struct Params { rows: u32, cols: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

//#include rowwise

const NONE: f32 = -3.402823e38;

// This lane's scaled scores at columns j, j + LANES, j + 2 LANES and j + 3 LANES, NONE past
// the keys: four loads in flight before any is used. One at a time, each waited for before the
// next, left the kernel at a third of the memory's speed on an H100 (docs/BENCHMARKS.md).
fn scores4(base: u32, j: u32, keys: u32) -> vec4<f32> {
    var v = vec4<f32>(NONE);
    if (j < keys) { v.x = x[base + j] * p.scale; }
    if (j + LANES < keys) { v.y = x[base + j + LANES] * p.scale; }
    if (j + 2u * LANES < keys) { v.z = x[base + j + 2u * LANES] * p.scale; }
    if (j + 3u * LANES < keys) { v.w = x[base + j + 3u * LANES] * p.scale; }
    return v;
}

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    // Keys up to and including the query's own position.
    let keys = select(0u, row % p.cols + 1u, valid);
    let step = 4u * LANES;
    // One pass for the maximum and the sum of exponentials, the sum rescaled whenever the
    // maximum grows (an online softmax), and one reduction of both.
    var m = NONE;
    var s = 0.0;
    for (var j = lane(lid); j < keys; j += step) {
        let v = scores4(base, j, keys);
        let grown = max(m, max(max(v.x, v.y), max(v.z, v.w)));
        let e = exp(v - grown);
        s = s * exp(m - grown) + (e.x + e.y) + (e.z + e.w);
        m = grown;
    }
    let ms = row_max_sum(vec2<f32>(m, s), lid);
    m = ms.x;
    s = ms.y;
    if (!valid) { return; }
    // The masked future: exp(NONE - m) is 0.
    for (var j = lane(lid); j < p.cols; j += step) {
        let e = exp(scores4(base, j, keys) - m) / s;
        y[base + j] = e.x;
        if (j + LANES < p.cols) { y[base + j + LANES] = e.y; }
        if (j + 2u * LANES < p.cols) { y[base + j + 2u * LANES] = e.z; }
        if (j + 3u * LANES < p.cols) { y[base + j + 3u * LANES] = e.w; }
    }
}
