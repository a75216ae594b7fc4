// LayerNorm backward for x, per row: with xh = (x - mean) rstd and gw = g w,
// dx = rstd (gw - mean(gw) - xh mean(gw xh)).

struct Params { rows: u32, cols: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;

//#include rowwise

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    var mean = 0.0;
    var rstd = 0.0;
    var s1 = 0.0;
    var s2 = 0.0;
    if (valid) {
        mean = stats[2u * row];
        rstd = stats[2u * row + 1u];
        for (var j = lane(lid); j < p.cols; j += LANES) {
            let gw = g[base + j] * w[j];
            s1 += gw;
            s2 += gw * (x[base + j] - mean) * rstd;
        }
    }
    let m1 = row_sum(s1, lid) / f32(p.cols);
    let m2 = row_sum(s2, lid) / f32(p.cols);
    if (!valid) { return; }
    for (var j = lane(lid); j < p.cols; j += LANES) {
        let xh = (x[base + j] - mean) * rstd;
        dx[base + j] = rstd * (g[base + j] * w[j] - m1 - xh * m2);
    }
}
