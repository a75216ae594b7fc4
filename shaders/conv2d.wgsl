// 2-D convolution, NCHW, square stride and zero padding: one thread per output element.
// x [N, Ci, H, W], w [Co, Ci, KH, KW], bias [Co] -> y [N, Co, HO, WO].

struct Params {
    n: u32, ci: u32, h: u32, w: u32,
    co: u32, kh: u32, kw: u32, ho: u32,
    wo: u32, stride: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    if (e >= p.n * p.co * p.ho * p.wo) { return; }
    let ox = e % p.wo;
    let oy = (e / p.wo) % p.ho;
    let o = (e / (p.wo * p.ho)) % p.co;
    let b = e / (p.wo * p.ho * p.co);
    var acc = bias[o];
    for (var c = 0u; c < p.ci; c++) {
        for (var ky = 0u; ky < p.kh; ky++) {
            let iy = i32(oy * p.stride + ky) - i32(p.pad);
            if (iy < 0 || iy >= i32(p.h)) { continue; }
            for (var kx = 0u; kx < p.kw; kx++) {
                let ix = i32(ox * p.stride + kx) - i32(p.pad);
                if (ix < 0 || ix >= i32(p.w)) { continue; }
                acc += x[((b * p.ci + c) * p.h + u32(iy)) * p.w + u32(ix)]
                     * wt[((o * p.ci + c) * p.kh + ky) * p.kw + kx];
            }
        }
    }
    y[e] = acc;
}
