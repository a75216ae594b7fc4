// Backward of causal_softmax.wgsl per row: dx = scale y (g - Σ g y) over the kept keys, zero
// over the masked future (where y is zero anyway: skipping it halves the reads).

struct Params { rows: u32, cols: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

//#include rowwise

// This lane's y and g at columns j, j + LANES, j + 2 LANES and j + 3 LANES, 0 past the keys:
// eight loads in flight before any is used (as in causal_softmax.wgsl).
struct Four { y: vec4<f32>, g: vec4<f32> }

fn four(base: u32, j: u32, keys: u32) -> Four {
    var f = Four(vec4<f32>(0.0), vec4<f32>(0.0));
    if (j < keys) { f.y.x = y[base + j]; f.g.x = g[base + j]; }
    let k1 = j + LANES;
    if (k1 < keys) { f.y.y = y[base + k1]; f.g.y = g[base + k1]; }
    let k2 = j + 2u * LANES;
    if (k2 < keys) { f.y.z = y[base + k2]; f.g.z = g[base + k2]; }
    let k3 = j + 3u * LANES;
    if (k3 < keys) { f.y.w = y[base + k3]; f.g.w = g[base + k3]; }
    return f;
}

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    let keys = select(0u, row % p.cols + 1u, valid);
    let step = 4u * LANES;
    var s = 0.0;
    for (var j = lane(lid); j < keys; j += step) {
        let f = four(base, j, keys);
        s += dot(f.g, f.y);
    }
    s = row_sum(s, lid);
    if (!valid) { return; }
    for (var j = lane(lid); j < p.cols; j += step) {
        let f = four(base, j, keys);
        // 0 past the keys, where y is 0.
        let d = p.scale * f.y * (f.g - s);
        dx[base + j] = d.x;
        if (j + LANES < p.cols) { dx[base + j + LANES] = d.y; }
        if (j + 2u * LANES < p.cols) { dx[base + j + 2u * LANES] = d.z; }
        if (j + 3u * LANES < p.cols) { dx[base + j + 3u * LANES] = d.w; }
    }
}
