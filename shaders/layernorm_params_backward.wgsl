// LayerNorm backward for the weight and bias: dw[j] = Σ_rows g xh, db[j] = Σ_rows g.
// One thread per column; consecutive threads read consecutive columns.

struct Params { rows: u32, cols: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> stats: array<f32>;
@group(0) @binding(3) var<storage, read> g: array<f32>;
@group(0) @binding(4) var<storage, read_write> dw: array<f32>;
@group(0) @binding(5) var<storage, read_write> db: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let j = gid.x + gid.y * nwg.x * 64u;
    if (j >= p.cols) { return; }
    var sw = 0.0;
    var sb = 0.0;
    for (var r = 0u; r < p.rows; r++) {
        let gv = g[r * p.cols + j];
        sw += gv * (x[r * p.cols + j] - stats[2u * r]) * stats[2u * r + 1u];
        sb += gv;
    }
    dw[j] = sw;
    db[j] = sb;
}
