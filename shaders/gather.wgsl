// The optimizer's gather: up to seven gradients, each copied to its place in one flat buffer,
// in one dispatch (workgroup z = which gradient). It stands in for a buffer copy each: in the
// browser every copy is a call of its own and ends the compute pass.
// Source s (0..6) is `src{s}`, `lens[s]` elements long, and goes to dst[places[s]..].

struct Params {
    lens: array<vec4<u32>, 2>,
    places: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> src0: array<f32>;
@group(0) @binding(3) var<storage, read> src1: array<f32>;
@group(0) @binding(4) var<storage, read> src2: array<f32>;
@group(0) @binding(5) var<storage, read> src3: array<f32>;
@group(0) @binding(6) var<storage, read> src4: array<f32>;
@group(0) @binding(7) var<storage, read> src5: array<f32>;
@group(0) @binding(8) var<storage, read> src6: array<f32>;

fn source(s: u32, i: u32) -> f32 {
    switch s {
        case 0u: { return src0[i]; }
        case 1u: { return src1[i]; }
        case 2u: { return src2[i]; }
        case 3u: { return src3[i]; }
        case 4u: { return src4[i]; }
        case 5u: { return src5[i]; }
        default: { return src6[i]; }
    }
}

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let s = gid.z;
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.lens[s / 4u][s % 4u]) { return; }
    dst[p.places[s / 4u][s % 4u] + i] = source(s, i);
}
