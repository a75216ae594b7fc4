// Causal softmax of attention scores, per row of a [batches, T, T] tensor: row i of each T×T
// block keeps keys j ≤ i, scaled by `scale` before the stable softmax; the masked future is
// written as zeros, so the products after it need no mask.

struct Params { rows: u32, cols: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

//#include rowwise

@compute @workgroup_size(ROW_WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    // Keys up to and including the query's own position.
    let keys = select(0u, row % p.cols + 1u, valid);
    var m = -3.402823e38;
    for (var j = lane(lid); j < keys; j += LANES) { m = max(m, x[base + j] * p.scale); }
    m = row_max(m, lid);
    var s = 0.0;
    for (var j = lane(lid); j < keys; j += LANES) { s += exp(x[base + j] * p.scale - m); }
    s = row_sum(s, lid);
    if (!valid) { return; }
    for (var j = lane(lid); j < p.cols; j += LANES) {
        y[base + j] = select(0.0, exp(x[base + j] * p.scale - m) / s, j < keys);
    }
}
