// Max-pool backward without atomics: each input element sums the gradients of the windows
// that picked it (windows may overlap when stride < k). With THROUGH_RELU the input is a ReLU's
// output, and its gradient is 0 where the input is (src/ops/pool.rs).

struct Params { planes: u32, h: u32, w: u32, ho: u32, wo: u32, k: u32, stride: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> argmax: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read> x: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;

override THROUGH_RELU: bool;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (e >= p.planes * p.h * p.w) { return; }
    let at = e % (p.h * p.w);
    let ix = at % p.w;
    let iy = at / p.w;
    let plane = e / (p.h * p.w);
    // Windows oy with oy*stride <= iy < oy*stride + k.
    let oy_lo = select(0u, (iy + 1u - p.k + p.stride - 1u) / p.stride, iy + 1u > p.k);
    let ox_lo = select(0u, (ix + 1u - p.k + p.stride - 1u) / p.stride, ix + 1u > p.k);
    let oy_hi = min(iy / p.stride, p.ho - 1u);
    let ox_hi = min(ix / p.stride, p.wo - 1u);
    var acc = 0.0;
    for (var oy = oy_lo; oy <= oy_hi; oy++) {
        for (var ox = ox_lo; ox <= ox_hi; ox++) {
            let o = (plane * p.ho + oy) * p.wo + ox;
            if (argmax[o] == at) { acc += g[o]; }
        }
    }
    if (THROUGH_RELU && x[e] <= 0.0) { acc = 0.0; }
    dx[e] = acc;
}
