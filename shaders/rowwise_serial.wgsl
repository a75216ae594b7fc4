// Row kernels, serial mode (emulated GPUs such as lavapipe and SwiftShader): each of a
// workgroup's 64 threads owns a whole row, so nothing is shared and nothing waits. The same
// functions as rowwise.wgsl.
//#slots ROWWISE ROW_GROUP SCORES

const WG: u32 = ROW_WORKGROUP;
const LANES: u32 = 1u;
const ROW_THREADS: u32 = ROW_WORKGROUP;

fn row_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x) * WG + lid;
}

fn lane(lid: u32) -> u32 {
    return 0u;
}

fn row_barrier() {}

fn row_sum(v: f32, lid: u32) -> f32 {
    return v;
}

fn row_max(v: f32, lid: u32) -> f32 {
    return v;
}

fn row_sum2(v: vec2<f32>, lid: u32) -> vec2<f32> {
    return v;
}

fn row_max_sum(v: vec2<f32>, lid: u32) -> vec2<f32> {
    return v;
}
