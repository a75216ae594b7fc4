// An input the shape of C added to it as it is stored (a residual connection), bound after the
// other inputs and before C.
@group(0) @binding({{RES}}) var<storage, read> residual: array<f32>;

// residual[at..at + 4] for columns col..col + 4 of one row, each index clamped to the row's
// last column (columns past it are not stored).
fn residual4(at: u32, col: u32) -> vec4<f32> {
    let last = at + p.n - 1u - col;
    return vec4<f32>(residual[min(at, last)], residual[min(at + 1u, last)],
                     residual[min(at + 2u, last)], residual[min(at + 3u, last)]);
}

fn finish4(at: u32, col: u32, v: vec4<f32>) -> vec4<f32> {
    return v + residual4(at, col);
}
