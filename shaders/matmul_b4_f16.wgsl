// B of the tiled product kernels stored as f16, four halves in two 32-bit words (a frozen
// weight: src/tensor/half.rs): its vec4 i (elements 4i..4i + 3), widened to f32, from half
// the bytes. unpack2x16float is core WGSL, so this needs no shader-f16 from the device.
@group(0) @binding(2) var<storage, read> b: array<vec2<u32>>;

fn b_stored4(i: u32) -> vec4<f32> {
    let w = b[i];
    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));
}
