// LayerNorm backward for real GPUs in one pass over the rows: a workgroup takes a chunk of rows
// and, row by row, writes dx as layernorm_backward.wgsl does while each thread adds up g xh and g
// for its own columns (col % ROW_WORKGROUP == thread) over the chunk. It writes one partial sum of each per
// column and chunk, [2, chunks, cols], which layernorm_params_finish.wgsl adds up into dw and db.
// Columns per thread (COLS_PER_LANE) size the sums kept in workgroup memory. With ADDS, x's
// gradient from its other uses (a residual connection's) is added into dx as it is stored.

struct Params { rows: u32, cols: u32, chunk: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> stats: array<f32>;
@group(0) @binding(4) var<storage, read> g: array<f32>;
@group(0) @binding(5) var<storage, read> so_far: array<f32>;
@group(0) @binding(6) var<storage, read_write> dx: array<f32>;
@group(0) @binding(7) var<storage, read_write> partials: array<f32>;

override ADDS: bool;

//#include rowwise

const SUMS: u32 = ROW_WORKGROUP * {{COLS_PER_LANE}}u;
var<workgroup> sum_w: array<f32, SUMS>;
var<workgroup> sum_b: array<f32, SUMS>;

@compute @workgroup_size(ROW_WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    for (var j = lid; j < SUMS; j += LANES) {
        sum_w[j] = 0.0;
        sum_b[j] = 0.0;
    }
    let first = wid.x * p.chunk;
    let end = min(first + p.chunk, p.rows);
    for (var row = first; row < end; row++) {
        let base = row * p.cols;
        let mean = stats[2u * row];
        let rstd = stats[2u * row + 1u];
        var s1 = 0.0;
        var s2 = 0.0;
        for (var j = lid; j < p.cols; j += LANES) {
            let gw = g[base + j] * w[j];
            s1 += gw;
            s2 += gw * (x[base + j] - mean) * rstd;
        }
        let m1 = row_sum(s1, lid) / f32(p.cols);
        let m2 = row_sum(s2, lid) / f32(p.cols);
        for (var j = lid; j < p.cols; j += LANES) {
            let gv = g[base + j];
            let xh = (x[base + j] - mean) * rstd;
            var d = rstd * (gv * w[j] - m1 - xh * m2);
            if (ADDS) { d += so_far[base + j]; }
            dx[base + j] = d;
            sum_w[j] += gv * xh;
            sum_b[j] += gv;
        }
    }
    for (var j = lid; j < p.cols; j += LANES) {
        partials[wid.x * p.cols + j] = sum_w[j];
        partials[(nwg.x + wid.x) * p.cols + j] = sum_b[j];
    }
}
