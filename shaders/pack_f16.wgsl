// f32 values rounded to f16 and packed two to a 32-bit word (src/tensor/half.rs's layout):
// word w holds elements 2w (low half) and 2w + 1; words past the values hold zeros, as an f16
// tensor's padding to a group of 4 does. pack2x16float is core WGSL: no shader-f16 needed. It
// leaves a value past f16's range undefined: values are first held to ±65,504 (f16's largest),
// so a large activation stays large rather than becoming anything.

const F16_MAX: f32 = 65504.0;

struct Params { n: u32, words: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (w >= p.words) { return; }
    let i = 2u * w;
    let lo = select(0.0, x[min(i, p.n - 1u)], i < p.n);
    let hi = select(0.0, x[min(i + 1u, p.n - 1u)], i + 1u < p.n);
    out[w] = pack2x16float(clamp(vec2<f32>(lo, hi), vec2<f32>(-F16_MAX), vec2<f32>(F16_MAX)));
}
