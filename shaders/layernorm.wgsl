// LayerNorm over the last axis: y = (x - mean) * rstd * w + b, one workgroup per row.
// Saves (mean, rstd) per row for the backward pass. y in f32, or in f16 for a product that
// reads it so (the Y slot: layernorm_y_f32.wgsl or _f16, which declare it and store a row).
//#slots Y

struct Params { rows: u32, cols: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(5) var<storage, read_write> stats: array<f32>;

//#include rowwise

//#include layernorm_x4
//#include layernorm_{{Y}}

// The normalised value of column j of the row from `base`.
fn normed(base: u32, j: u32, mean: f32, rstd: f32) -> f32 {
    return (x[base + j] - mean) * rstd * w[j] + b[j];
}

fn in_row(j: u32) -> vec4<bool> {
    return vec4<u32>(j, j + LANES, j + 2u * LANES, j + 3u * LANES) < vec4<u32>(p.cols);
}

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.rows;
    let base = row * p.cols;
    let step = 4u * LANES;
    var s = 0.0;
    if (valid) {
        for (var j = lane(lid); j < p.cols; j += step) { s += dot(x4(base, j), vec4<f32>(1.0)); }
    }
    let mean = row_sum(s, lid) / f32(p.cols);
    var v = 0.0;
    if (valid) {
        for (var j = lane(lid); j < p.cols; j += step) {
            let d = select(vec4<f32>(0.0), x4(base, j) - mean, in_row(j));
            v += dot(d, d);
        }
    }
    let rstd = inverseSqrt(row_sum(v, lid) / f32(p.cols) + p.eps);
    if (!valid) { return; }
    store_row(base, lane(lid), mean, rstd);
    if (lane(lid) == 0u) {
        stats[2u * row] = mean;
        stats[2u * row + 1u] = rstd;
    }
}
