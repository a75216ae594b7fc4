// Maxima and their first index along one axis. The input is viewed as [outer, n, inner];
// each (outer, inner) column of n values is one "row" of the row-kernel helpers.

struct Params { outer: u32, n: u32, inner: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> out_index: array<u32>;

//#include rowwise

var<workgroup> part: array<f32, WG>;
var<workgroup> part_index: array<u32, WG>;

const NONE: u32 = 0xffffffffu;

// True when (a, ia) should win over (b, ib): larger value, NaN wins, ties go to the first index.
fn better(a: f32, ia: u32, b: f32, ib: u32) -> bool {
    if (ib == NONE) { return ia != NONE; }
    if (ia == NONE) { return false; }
    if (a != a) { return b == b || ia < ib; }
    if (b != b) { return false; }
    return a > b || (a == b && ia < ib);
}

@compute @workgroup_size(ROW_THREADS)
fn max_axis(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let col = row_of(wid, nwg, lid);
    let valid = col < p.outer * p.inner;
    let o = col / p.inner;
    let i = col % p.inner;
    var best = 0.0;
    var best_j = NONE;
    if (valid) {
        for (var j = lane(lid); j < p.n; j += LANES) {
            let v = xs[(o * p.n + j) * p.inner + i];
            if (better(v, j, best, best_j)) {
                best = v;
                best_j = j;
            }
        }
    }
    if (LANES > 1u) {
        // A tree within each row's LANES threads, which are neighbours in the workgroup.
        part[lid] = best;
        part_index[lid] = best_j;
        workgroupBarrier();
        for (var s = LANES / 2u; s > 0u; s = s / 2u) {
            if (lane(lid) < s && better(part[lid + s], part_index[lid + s], part[lid], part_index[lid])) {
                part[lid] = part[lid + s];
                part_index[lid] = part_index[lid + s];
            }
            workgroupBarrier();
        }
        best = part[lid - lane(lid)];
        best_j = part_index[lid - lane(lid)];
    }
    if (lane(lid) == 0u && valid) {
        out[col] = best;
        out_index[col] = best_j;
    }
}
