// A bias added to every column of C, one value per row (a convolution's per-channel bias, its
// channels C's rows), read as an input before C's binding.
@group(0) @binding(3) var<storage, read> bias: array<f32>;

// The bias of row `row`, clamped to the last row (rows past it are not stored).
fn bias4(row: u32, col: u32) -> vec4<f32> {
    return vec4<f32>(bias[min(row, p.m - 1u)]);
}
