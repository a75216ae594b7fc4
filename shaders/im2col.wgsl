// Convolution as matrix products: im2col unfolds each image's receptive fields into columns,
// col[n, (c, ky, kx), (oy, ox)] = x[n, c, oy*stride + ky - pad, ox*stride + kx - pad] (0 off
// the image), so that conv2d = weight[out, (c, ky, kx)] · col. One thread per col element.

struct Params {
    n: u32, ci: u32, h: u32, w: u32,
    co: u32, kh: u32, kw: u32, ho: u32,
    wo: u32, stride: u32, pad: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> col: array<f32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    let positions = p.ho * p.wo;
    let taps = p.ci * p.kh * p.kw;
    if (e >= p.n * taps * positions) { return; }
    let at = e % positions;
    let r = (e / positions) % taps;
    let b = e / (positions * taps);
    let c = r / (p.kh * p.kw);
    let ky = (r / p.kw) % p.kh;
    let kx = r % p.kw;
    let iy = i32((at / p.wo) * p.stride + ky) - i32(p.pad);
    let ix = i32((at % p.wo) * p.stride + kx) - i32(p.pad);
    if (iy < 0 || iy >= i32(p.h) || ix < 0 || ix >= i32(p.w)) {
        col[e] = 0.0;
    } else {
        col[e] = x[((b * p.ci + c) * p.h + u32(iy)) * p.w + u32(ix)];
    }
}
