// Dropout with a seed: element i is kept when hash(seed, i) >= p and then scaled by 1/(1-p).
// The CPU computes the same hash, so both backends drop the same elements, and backward is
// the same mask applied to the gradient.

struct Params { n: u32, seed: u32, p: f32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

//#include dropout_mask

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.n) { return; }
    y[i] = select(0.0, x[i] * p.scale, kept(i, p.seed, p.p));
}
