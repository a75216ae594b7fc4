// Softmax and log-softmax over the last axis, numerically stable (the row max is subtracted).
//#slots OUT

struct Params { rows: u32, cols: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

//#include rowwise

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    var m = -3.402823e38;
    if (valid) {
        for (var j = lane(lid); j < p.cols; j += LANES) { m = max(m, x[base + j]); }
    }
    m = row_max(m, lid);
    var s = 0.0;
    if (valid) {
        for (var j = lane(lid); j < p.cols; j += LANES) { s += exp(x[base + j] - m); }
    }
    s = row_sum(s, lid);
    if (!valid) { return; }
    let log_s = log(s);
    for (var j = lane(lid); j < p.cols; j += LANES) {
        let z = x[base + j] - m;
        y[base + j] = {{OUT}};
    }
}
