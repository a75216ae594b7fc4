// Strided copies: dst[dst_off + idx·ds] = src[src_off + idx·ss] for every index idx of `shape`.
// Permute, slice, expand, concat and their backward passes are all this one kernel. ELEM is f32,
// or vec4<f32> where src/ops/copy.rs has put the copy in units of four.
//#slots ELEM

struct Params {
    n: u32,
    rank: u32,
    src_off: u32,
    dst_off: u32,
    shape: array<vec4<u32>, 2>,
    ss: array<vec4<u32>, 2>,
    ds: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<{{ELEM}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{ELEM}}>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.n) { return; }
    var rem = i;
    var si = p.src_off;
    var di = p.dst_off;
    // The outermost coordinate is what remains: no division for it (and none at all for a
    // flat walk), since integer division is slow on CPU-emulated adapters.
    for (var d = i32(p.rank) - 1; d > 0; d--) {
        let size = p.shape[d / 4][d % 4];
        let coord = rem % size;
        rem = rem / size;
        si += coord * p.ss[d / 4][d % 4];
        di += coord * p.ds[d / 4][d % 4];
    }
    si += rem * p.ss[0].x;
    di += rem * p.ds[0].x;
    dst[di] = src[si];
}
