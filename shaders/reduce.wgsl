// Reductions along one axis. The input is viewed as [outer, n, inner]; one workgroup of 64
// threads reduces one (outer, inner) column of n values and writes one output.

struct Params { outer: u32, n: u32, inner: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> out_index: array<u32>;

const WG: u32 = 64u;
var<workgroup> part: array<f32, WG>;
var<workgroup> part_index: array<u32, WG>;

fn column(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

@compute @workgroup_size(64)
fn sum_axis(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let col = column(wid, nwg);
    let valid = col < p.outer * p.inner;
    let o = col / p.inner;
    let i = col % p.inner;
    var acc = 0.0;
    if (valid) {
        for (var j = lid; j < p.n; j += WG) {
            acc += xs[(o * p.n + j) * p.inner + i];
        }
    }
    part[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) { part[lid] += part[lid + s]; }
        workgroupBarrier();
    }
    if (lid == 0u && valid) { out[col] = part[0]; }
}

// True when (a, ia) should win over (b, ib): larger value, NaN wins, ties go to the first index.
fn better(a: f32, ia: u32, b: f32, ib: u32) -> bool {
    if (a != a) { return b == b || ia < ib; }
    if (b != b) { return false; }
    return a > b || (a == b && ia < ib);
}

@compute @workgroup_size(64)
fn max_axis(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let col = column(wid, nwg);
    let valid = col < p.outer * p.inner;
    let o = col / p.inner;
    let i = col % p.inner;
    var best = -3.402823e38;
    var best_j = 0xffffffffu;
    if (valid) {
        for (var j = lid; j < p.n; j += WG) {
            let v = xs[(o * p.n + j) * p.inner + i];
            if (best_j == 0xffffffffu || better(v, j, best, best_j)) {
                best = v;
                best_j = j;
            }
        }
    }
    part[lid] = best;
    part_index[lid] = best_j;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) {
            let other = part_index[lid + s];
            if (other != 0xffffffffu && (part_index[lid] == 0xffffffffu ||
                better(part[lid + s], other, part[lid], part_index[lid]))) {
                part[lid] = part[lid + s];
                part_index[lid] = other;
            }
        }
        workgroupBarrier();
    }
    if (lid == 0u && valid) {
        out[col] = part[0];
        out_index[col] = part_index[0];
    }
}
