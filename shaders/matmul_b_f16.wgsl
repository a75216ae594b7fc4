// B of the scalar product kernels stored as f16, two halves to a 32-bit word (a frozen weight:
// src/tensor/half.rs): B's element i, widened to f32. unpack2x16float is core WGSL, so this
// needs no shader-f16 from the device.
@group(0) @binding(2) var<storage, read> b: array<u32>;

fn b_stored(i: u32) -> f32 {
    return unpack2x16float(b[i >> 1u])[i & 1u];
}
