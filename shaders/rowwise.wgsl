// Row kernels, shared mode (real GPUs): one workgroup of 64 threads per row, which stride over
// the row's columns and combine through workgroup memory. Every thread of a workgroup must
// call row_sum / row_max / row_barrier (they hold barriers). rowwise_serial.wgsl has the same
// functions for emulated GPUs, where barriers are costly: one thread per row.

const WG: u32 = ROW_WORKGROUP;
const LANES: u32 = ROW_WORKGROUP;
var<workgroup> scratch: array<f32, WG>;

fn row_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return wid.x + wid.y * nwg.x;
}

fn lane(lid: u32) -> u32 {
    return lid;
}

fn row_barrier() {
    workgroupBarrier();
}

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
