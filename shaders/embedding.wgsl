// Embedding gather: out[n, d] = weight[index[n], d]. An index outside the vocabulary gives NaN.

struct Params { n: u32, dim: u32, vocab: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

//#include math

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (e >= p.n * p.dim) { return; }
    let row = index[e / p.dim];
    if (row >= p.vocab) {
        out[e] = nan();
    } else {
        out[e] = weight[row * p.dim + e % p.dim];
    }
}
