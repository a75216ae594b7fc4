// An f16 tensor (src/tensor/half.rs: two halves to a 32-bit word) widened to f32:
// out[i] = element i. unpack2x16float is core WGSL: no shader-f16 needed.

struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> halves: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i < p.n) { out[i] = unpack2x16float(halves[i >> 1u])[i & 1u]; }
}
