// C times GELU's derivative at an input of C's shape, bound where a residual would be: the
// gradient of a linear layer's input passed on through the GELU that made it (src/ops/linear.rs,
// `Tensor::gelu_linear_residual`), with no pass of its own.

//#include math

@group(0) @binding({{RES}}) var<storage, read> gelu_input: array<f32>;

// x for the columns col..col + 4 of one row, each index clamped to the row's last column
// (columns past it are not stored).
fn tail4(at: u32, col: u32) -> vec4<f32> {
    let last = at + p.n - 1u - col;
    return vec4<f32>(gelu_input[min(at, last)], gelu_input[min(at + 1u, last)],
                     gelu_input[min(at + 2u, last)], gelu_input[min(at + 3u, last)]);
}

// v times gelu'(x).
fn finish4(at: u32, v: vec4<f32>, x: vec4<f32>) -> vec4<f32> {
    return v * vec4<f32>(gelu_grad(x.x), gelu_grad(x.y), gelu_grad(x.z), gelu_grad(x.w));
}
