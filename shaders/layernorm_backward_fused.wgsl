// LayerNorm backward for real GPUs in one pass over the rows: a workgroup takes a chunk of rows,
// ROWS_PER_GROUP at a time (one to each LANES threads, shaders/rowwise.wgsl), and writes dx as
// layernorm_backward.wgsl does while each thread adds up g xh and g for its own columns
// (col % LANES == lane) of its rows. Each row slot of the workgroup keeps its own sums; at the
// end the slots' sums are added and written as one partial sum of each per column and chunk,
// [2, chunks, cols], which layernorm_params_finish.wgsl adds up into dw and db. Columns per
// thread (COLS_PER_LANE) size the sums kept in workgroup memory. With ADDS, x's gradient from
// its other uses (a residual connection's) is added into dx as it is stored.
//#slots COLS_PER_LANE

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

// One row slot's sums: as many as a row has columns, rounded up to whole lanes.
const SUMS: u32 = LANES * {{COLS_PER_LANE}}u;
var<workgroup> sum_w: array<f32, SUMS * ROWS_PER_GROUP>;
var<workgroup> sum_b: array<f32, SUMS * ROWS_PER_GROUP>;

// This lane's g and w at columns j, j + LANES, j + 2 LANES and j + 3 LANES, 0 past the row, as
// x4 (shaders/layernorm_x4.wgsl) loads x.
fn g4(base: u32, j: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (j < p.cols) { v.x = g[base + j]; }
    if (j + LANES < p.cols) { v.y = g[base + j + LANES]; }
    if (j + 2u * LANES < p.cols) { v.z = g[base + j + 2u * LANES]; }
    if (j + 3u * LANES < p.cols) { v.w = g[base + j + 3u * LANES]; }
    return v;
}

//#include layernorm_x4

fn w4(j: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (j < p.cols) { v.x = w[j]; }
    if (j + LANES < p.cols) { v.y = w[j + LANES]; }
    if (j + 2u * LANES < p.cols) { v.z = w[j + 2u * LANES]; }
    if (j + 3u * LANES < p.cols) { v.w = w[j + 3u * LANES]; }
    return v;
}

fn so_far4(base: u32, j: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (j < p.cols) { v.x = so_far[base + j]; }
    if (j + LANES < p.cols) { v.y = so_far[base + j + LANES]; }
    if (j + 2u * LANES < p.cols) { v.z = so_far[base + j + 2u * LANES]; }
    if (j + 3u * LANES < p.cols) { v.w = so_far[base + j + 3u * LANES]; }
    return v;
}

// Column k's dx, and its terms of the row slot's sums, where k is in the row.
fn put(base: u32, own: u32, k: u32, d: f32, gx: f32, gv: f32) {
    if (k >= p.cols) { return; }
    dx[base + k] = d;
    sum_w[own + k] += gx;
    sum_b[own + k] += gv;
}

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    for (var j = lid; j < SUMS * ROWS_PER_GROUP; j += ROW_THREADS) {
        sum_w[j] = 0.0;
        sum_b[j] = 0.0;
    }
    let slot = lid / LANES;
    let own = slot * SUMS;
    let first = wid.x * p.chunk;
    let end = min(first + p.chunk, p.rows);
    // Every slot goes round as often as the first, for the barriers in row_sum2.
    for (var r0 = first; r0 < end; r0 += ROWS_PER_GROUP) {
        let row = r0 + slot;
        let valid = row < end;
        let base = row * p.cols;
        var mean = 0.0;
        var rstd = 0.0;
        var s = vec2<f32>(0.0);
        if (valid) {
            mean = stats[2u * row];
            rstd = stats[2u * row + 1u];
            for (var j = lane(lid); j < p.cols; j += 4u * LANES) {
                let gw = g4(base, j) * w4(j);
                s += vec2<f32>(dot(gw, vec4<f32>(1.0)), dot(gw, (x4(base, j) - mean) * rstd));
            }
        }
        let m = row_sum2(s, lid) / f32(p.cols);
        // Not `continue`: the loop's barriers must stay in uniform control flow.
        if (valid) {
            for (var j = lane(lid); j < p.cols; j += 4u * LANES) {
                let gv = g4(base, j);
                let xh = (x4(base, j) - mean) * rstd;
                var d = rstd * (gv * w4(j) - m.x - xh * m.y);
                if (ADDS) { d += so_far4(base, j); }
                let gx = gv * xh;
                put(base, own, j, d.x, gx.x, gv.x);
                put(base, own, j + LANES, d.y, gx.y, gv.y);
                put(base, own, j + 2u * LANES, d.z, gx.z, gv.z);
                put(base, own, j + 3u * LANES, d.w, gx.w, gv.w);
            }
        }
    }
    workgroupBarrier();
    for (var j = lid; j < p.cols; j += ROW_THREADS) {
        var tw = 0.0;
        var tb = 0.0;
        for (var k = 0u; k < ROWS_PER_GROUP; k++) {
            tw += sum_w[k * SUMS + j];
            tb += sum_b[k * SUMS + j];
        }
        partials[wid.x * p.cols + j] = tw;
        partials[(nwg.x + wid.x) * p.cols + j] = tb;
    }
}
