// RMSNorm over the last axis: y = x * rstd * w with rstd = 1 / sqrt(mean(x²) + eps), one
// workgroup per row. Saves rstd per row for the backward pass.

struct Params { rows: u32, cols: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> rstds: array<f32>;

//#include rowwise

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    var s = 0.0;
    if (valid) {
        for (var j = lane(lid); j < p.cols; j += LANES) { s += x[base + j] * x[base + j]; }
    }
    let rstd = inverseSqrt(row_sum(s, lid) / f32(p.cols) + p.eps);
    if (!valid) { return; }
    for (var j = lane(lid); j < p.cols; j += LANES) {
        y[base + j] = x[base + j] * rstd * w[j];
    }
    if (lane(lid) == 0u) {
        rstds[row] = rstd;
    }
}
