// B of the scalar product kernels stored as f32: B's element i.
@group(0) @binding(2) var<storage, read> b: array<f32>;

fn b_stored(i: u32) -> f32 {
    return b[i];
}
