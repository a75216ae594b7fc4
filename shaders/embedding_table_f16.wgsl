// The embedding's table stored as f16, two halves to a 32-bit word (a frozen table:
// src/tensor/half.rs): its element i, widened by WGSL's core unpack2x16float.
@group(0) @binding(1) var<storage, read> weight: array<u32>;

fn weight_at(i: u32) -> f32 {
    return unpack2x16float(weight[i >> 1u])[i & 1u];
}
