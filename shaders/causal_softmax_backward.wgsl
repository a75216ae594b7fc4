// Backward of causal_softmax.wgsl per row: dx = scale y (g - Σ g y) over the kept keys, zero
// over the masked future (where y is zero anyway: skipping it halves the reads).

struct Params { rows: u32, cols: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

//#include rowwise

@compute @workgroup_size(ROW_WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    let keys = select(0u, row % p.cols + 1u, valid);
    var s = 0.0;
    for (var j = lane(lid); j < keys; j += LANES) { s += g[base + j] * y[base + j]; }
    s = row_sum(s, lid);
    if (!valid) { return; }
    for (var j = lane(lid); j < p.cols; j += LANES) {
        let i = base + j;
        dx[i] = select(0.0, p.scale * y[i] * (g[i] - s), j < keys);
    }
}
