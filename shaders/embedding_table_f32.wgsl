// The embedding's table stored as f32: its element i.
@group(0) @binding(1) var<storage, read> weight: array<f32>;

fn weight_at(i: u32) -> f32 {
    return weight[i];
}
