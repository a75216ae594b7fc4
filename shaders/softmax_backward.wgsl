// Backward of softmax (dx = y (g - Σ g y)) and log-softmax (dx = g - exp(y) Σ g), per row.

struct Params { rows: u32, cols: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> y: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

//#include rowwise

override LOG: bool;

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    var s = 0.0;
    if (valid) {
        for (var j = lane(lid); j < p.cols; j += LANES) {
            s += select(g[base + j] * y[base + j], g[base + j], LOG);
        }
    }
    s = row_sum(s, lid);
    if (!valid) { return; }
    for (var j = lane(lid); j < p.cols; j += LANES) {
        let i = base + j;
        dx[i] = select(y[i] * (g[i] - s), g[i] - exp(y[i]) * s, LOG);
    }
}
