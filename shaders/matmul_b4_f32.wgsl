// B of the tiled product kernels stored as f32: its vec4 i (elements 4i..4i + 3).
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;

fn b_stored4(i: u32) -> vec4<f32> {
    return b[i];
}
