// The adjoint of im2col: each input element sums the column entries it was copied to, which
// gives the input gradient of a convolution from the gradient of its columns. One thread per
// input element, no atomics.

struct Params {
    n: u32, ci: u32, h: u32, w: u32,
    co: u32, kh: u32, kw: u32, ho: u32,
    wo: u32, stride: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dcol: array<f32>;
@group(0) @binding(2) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (e >= p.n * p.ci * p.h * p.w) { return; }
    let ix = e % p.w;
    let iy = (e / p.w) % p.h;
    let c = (e / (p.w * p.h)) % p.ci;
    let b = e / (p.w * p.h * p.ci);
    let positions = p.ho * p.wo;
    let taps = p.ci * p.kh * p.kw;
    var acc = 0.0;
    for (var ky = 0u; ky < p.kh; ky++) {
        let ty = i32(iy + p.pad) - i32(ky);
        if (ty < 0 || ty % i32(p.stride) != 0) { continue; }
        let oy = u32(ty) / p.stride;
        if (oy >= p.ho) { continue; }
        for (var kx = 0u; kx < p.kw; kx++) {
            let tx = i32(ix + p.pad) - i32(kx);
            if (tx < 0 || tx % i32(p.stride) != 0) { continue; }
            let ox = u32(tx) / p.stride;
            if (ox >= p.wo) { continue; }
            let r = (c * p.kh + ky) * p.kw + kx;
            acc += dcol[(b * taps + r) * positions + oy * p.wo + ox];
        }
    }
    dx[e] = acc;
}
