// Sums along one axis. The input is viewed as [outer, n, inner]; each (outer, inner)
// column of n values is one "row" of the row-kernel helpers (shared or serial mode).

struct Params { outer: u32, n: u32, inner: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

//#include rowwise

@compute @workgroup_size(ROW_THREADS)
fn sum_axis(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) lid: u32) {
    let col = row_of(wid, nwg, lid);
    let valid = col < p.outer * p.inner;
    let o = col / p.inner;
    let i = col % p.inner;
    var acc = 0.0;
    if (valid) {
        for (var j = lane(lid); j < p.n; j += LANES) {
            acc += xs[(o * p.n + j) * p.inner + i];
        }
    }
    let total = row_sum(acc, lid);
    if (lane(lid) == 0u && valid) { out[col] = total; }
}
