// A bias added to every row of C (Linear layers), read as an input before C's binding.
@group(0) @binding(3) var<storage, read> bias: array<f32>;

// bias[col..col + 4], clamped to the last column (columns past it are not stored).
fn bias4(row: u32, col: u32) -> vec4<f32> {
    let last = p.n - 1u;
    return vec4<f32>(bias[min(col, last)], bias[min(col + 1u, last)], bias[min(col + 2u, last)],
                     bias[min(col + 3u, last)]);
}
