// 2-D max pooling, NCHW, square window `k` moving by `stride`, no padding. Writes the max and,
// for backward, the flat index (iy * W + ix) of the first maximum within its plane.

struct Params { planes: u32, h: u32, w: u32, ho: u32, wo: u32, k: u32, stride: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read_write> argmax: array<u32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (e >= p.planes * p.ho * p.wo) { return; }
    let ox = e % p.wo;
    let oy = (e / p.wo) % p.ho;
    let plane = e / (p.wo * p.ho);
    let base = plane * p.h * p.w;
    var best = -3.402823e38;
    var best_at = (oy * p.stride) * p.w + ox * p.stride;
    for (var ky = 0u; ky < p.k; ky++) {
        for (var kx = 0u; kx < p.k; kx++) {
            let at = (oy * p.stride + ky) * p.w + ox * p.stride + kx;
            let v = x[base + at];
            if (v > best || v != v) {
                best = v;
                best_at = at;
            }
        }
    }
    y[e] = x[base + best_at];
    argmax[e] = best_at;
}
