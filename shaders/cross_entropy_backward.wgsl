// Backward of the per-row cross-entropy: dx = scale g[row] (softmax(x) - onehot(target)), or
// with SHARED_G scale g[0] (...): the mean's one gradient, read by every row; with ONE_G as
// well, scale (...): the loss's gradient is the 1 backward starts from, and `g` is not read
// (src/ops/cross_entropy.rs).

struct Params { rows: u32, cols: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<u32>;
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;

//#include rowwise

override SHARED_G: bool;
override ONE_G: bool;

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
    let t = targets[row];
    var gr = p.scale;
    if (!ONE_G) { gr *= g[select(row, 0u, SHARED_G)]; }
    for (var j = lane(lid); j < p.cols; j += LANES) {
        let prob = exp(x[base + j] - m) / s;
        dx[base + j] = gr * (prob - select(0.0, 1.0, j == t));
    }
}
