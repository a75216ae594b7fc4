// Conv2d backward for the weight: one thread per weight element sums over batch and outputs.

struct Params {
    n: u32, ci: u32, h: u32, w: u32,
    co: u32, kh: u32, kw: u32, ho: u32,
    wo: u32, stride: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dw: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * 256u;
    if (e >= p.co * p.ci * p.kh * p.kw) { return; }
    let kx = e % p.kw;
    let ky = (e / p.kw) % p.kh;
    let c = (e / (p.kw * p.kh)) % p.ci;
    let o = e / (p.kw * p.kh * p.ci);
    var acc = 0.0;
    for (var b = 0u; b < p.n; b++) {
        for (var oy = 0u; oy < p.ho; oy++) {
            let iy = i32(oy * p.stride + ky) - i32(p.pad);
            if (iy < 0 || iy >= i32(p.h)) { continue; }
            for (var ox = 0u; ox < p.wo; ox++) {
                let ix = i32(ox * p.stride + kx) - i32(p.pad);
                if (ix < 0 || ix >= i32(p.w)) { continue; }
                acc += g[((b * p.co + o) * p.ho + oy) * p.wo + ox]
                     * x[((b * p.ci + c) * p.h + u32(iy)) * p.w + u32(ix)];
            }
        }
    }
    dw[e] = acc;
}
