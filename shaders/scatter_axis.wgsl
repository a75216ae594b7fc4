// Backward of max along an axis: the gradient goes to the arg-max of each column, 0 elsewhere.
// One thread per input element of [outer, n, inner].

struct Params { outer: u32, n: u32, inner: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> index: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (e >= p.outer * p.n * p.inner) { return; }
    let i = e % p.inner;
    let j = (e / p.inner) % p.n;
    let o = e / (p.inner * p.n);
    let col = o * p.inner + i;
    dx[e] = select(0.0, g[col], index[col] == j);
}
