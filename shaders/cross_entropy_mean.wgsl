// The mean softmax cross-entropy of few rows in one pass: one workgroup, each thread taking
// rows lid, lid + ELEMENTWISE_WORKGROUP, ..., whose losses the workgroup then sums, so that the
// mean needs no pass of its own (src/ops/cross_entropy.rs). loss[0] = scale · Σ (logsumexp(x)
// - x[target]), scale 1 / rows. A target outside the classes makes it NaN.
// With GRAD each row's gradient too, dx = scale · (softmax(x) - onehot(target)): the loss's
// backward from its gradient of 1, taken here so that backward needs no pass for it.

struct Params { rows: u32, cols: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> targets: array<u32>;
@group(0) @binding(3) var<storage, read_write> loss: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;

override GRAD: bool;

//#include math

var<workgroup> partial: array<f32, ELEMENTWISE_WORKGROUP>;

fn row_loss(row: u32) -> f32 {
    let base = row * p.cols;
    let t = targets[row];
    var m = -3.402823e38;
    for (var j = 0u; j < p.cols; j++) { m = max(m, x[base + j]); }
    var s = 0.0;
    for (var j = 0u; j < p.cols; j++) { s += exp(x[base + j] - m); }
    if (GRAD) {
        for (var j = 0u; j < p.cols; j++) {
            let prob = exp(x[base + j] - m) / s;
            dx[base + j] = p.scale * (prob - select(0.0, 1.0, j == t));
        }
    }
    if (t >= p.cols) { return nan(); }
    return m + log(s) - x[base + t];
}

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(local_invocation_index) lid: u32) {
    var total = 0.0;
    for (var row = lid; row < p.rows; row += ELEMENTWISE_WORKGROUP) { total += row_loss(row); }
    partial[lid] = total;
    workgroupBarrier();
    for (var half = ELEMENTWISE_WORKGROUP / 2u; half > 0u; half /= 2u) {
        if (lid < half) { partial[lid] += partial[lid + half]; }
        workgroupBarrier();
    }
    if (lid == 0u) { loss[0] = p.scale * partial[0]; }
}
