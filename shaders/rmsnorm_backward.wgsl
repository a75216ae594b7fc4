// RMSNorm backward for x, per row: with xh = x rstd and gw = g w, dx = rstd (gw - xh mean(gw xh)).

struct Params { rows: u32, cols: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> rstds: array<f32>;
@group(0) @binding(4) var<storage, read> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;

//#include rowwise

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    var rstd = 0.0;
    var s = 0.0;
    if (valid) {
        rstd = rstds[row];
        for (var j = lane(lid); j < p.cols; j += LANES) {
            s += g[base + j] * w[j] * x[base + j] * rstd;
        }
    }
    let m = row_sum(s, lid) / f32(p.cols);
    if (!valid) { return; }
    for (var j = lane(lid); j < p.cols; j += LANES) {
        let xh = x[base + j] * rstd;
        dx[base + j] = rstd * (g[base + j] * w[j] - xh * m);
    }
}
