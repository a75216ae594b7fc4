// Workgroup-wide reductions for row kernels: one workgroup of 64 threads per row. Every
// thread of the workgroup must call them (they hold barriers).

const WG: u32 = 64u;
var<workgroup> scratch: array<f32, WG>;

fn row_sum(v: f32, lid: u32) -> f32 {
    scratch[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) { scratch[lid] += scratch[lid + s]; }
        workgroupBarrier();
    }
    let total = scratch[0];
    workgroupBarrier();
    return total;
}

fn row_max(v: f32, lid: u32) -> f32 {
    scratch[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) { scratch[lid] = max(scratch[lid], scratch[lid + s]); }
        workgroupBarrier();
    }
    let total = scratch[0];
    workgroupBarrier();
    return total;
}

fn row_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}
