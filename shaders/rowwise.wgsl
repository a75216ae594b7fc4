// Row kernels, shared mode (real GPUs): a workgroup of ROW_THREADS threads takes
// ROWS_PER_GROUP neighbouring rows, LANES threads to a row (ROW_WORKGROUP, shared with the Rust
// side, which sizes workgroup memory by it), which stride over the row's columns and combine
// through workgroup memory. Every thread of a workgroup must call row_sum, row_sum2, row_max,
// row_max_sum and row_barrier (they hold barriers). rowwise_serial.wgsl has the same functions
// for emulated GPUs, where barriers are costly: one thread per row.
//#slots ROWWISE ROW_GROUP SCORES

const LANES: u32 = ROW_WORKGROUP;
const ROWS_PER_GROUP: u32 = {{ROW_GROUP}}u;
const ROW_THREADS: u32 = LANES * ROWS_PER_GROUP;
const WG: u32 = ROW_THREADS;
var<workgroup> scratch: array<f32, ROW_THREADS>;
var<workgroup> scratch2: array<vec2<f32>, ROW_THREADS>;

fn row_of(wid: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wid.x + wid.y * nwg.x) * ROWS_PER_GROUP + lid / LANES;
}

fn lane(lid: u32) -> u32 {
    return lid % LANES;
}

fn row_barrier() {
    workgroupBarrier();
}

// A tree within each row's LANES threads (at most 64: src/gpu/params.rs), which are neighbours
// in the workgroup. (Each thread reading its row's 64 values itself, between two barriers, was
// slower on an H100.) The six halvings are written out (//#repeat), not looped: compilers
// bound every loop's iterations with a counter of their own, which cost the row kernels about
// 10 % on an H100.
fn row_sum(v: f32, lid: u32) -> f32 {
    scratch[lid] = v;
    workgroupBarrier();
    //#repeat 6
    if (LANES > (32u >> #u)) {
        if (lane(lid) < (32u >> #u)) { scratch[lid] += scratch[lid + (32u >> #u)]; }
        workgroupBarrier();
    }
    //#end
    let total = scratch[lid - lane(lid)];
    workgroupBarrier();
    return total;
}

fn row_max(v: f32, lid: u32) -> f32 {
    scratch[lid] = v;
    workgroupBarrier();
    //#repeat 6
    if (LANES > (32u >> #u)) {
        if (lane(lid) < (32u >> #u)) { scratch[lid] = max(scratch[lid], scratch[lid + (32u >> #u)]); }
        workgroupBarrier();
    }
    //#end
    let total = scratch[lid - lane(lid)];
    workgroupBarrier();
    return total;
}

// Two sums at once (LayerNorm's backward), for the barriers of one.
fn row_sum2(v: vec2<f32>, lid: u32) -> vec2<f32> {
    scratch2[lid] = v;
    workgroupBarrier();
    //#repeat 6
    if (LANES > (32u >> #u)) {
        if (lane(lid) < (32u >> #u)) { scratch2[lid] += scratch2[lid + (32u >> #u)]; }
        workgroupBarrier();
    }
    //#end
    let total = scratch2[lid - lane(lid)];
    workgroupBarrier();
    return total;
}

// Two threads' (maximum, sum of exponentials relative to it), as one over both.
fn max_sum(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let m = max(a.x, b.x);
    return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

// The row's maximum and its sum of exponentials relative to it, from each thread's own
// (an online softmax's pair), for the barriers of one reduction.
fn row_max_sum(v: vec2<f32>, lid: u32) -> vec2<f32> {
    scratch2[lid] = v;
    workgroupBarrier();
    //#repeat 6
    if (LANES > (32u >> #u)) {
        if (lane(lid) < (32u >> #u)) { scratch2[lid] = max_sum(scratch2[lid], scratch2[lid + (32u >> #u)]); }
        workgroupBarrier();
    }
    //#end
    let total = scratch2[lid - lane(lid)];
    workgroupBarrier();
    return total;
}
