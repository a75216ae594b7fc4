// C where the ReLU's output y, of C's shape, is positive and 0 elsewhere, bound where a
// residual would be: the gradient of a linear layer's input passed on through the ReLU that
// made it (the input came out of `Tensor::linear_relu` or `relu`), with no pass of its own.

@group(0) @binding({{RES}}) var<storage, read> relu_output: array<f32>;

// y for the columns col..col + 4 of one row, each index clamped to the row's last column
// (columns past it are not stored).
fn tail4(at: u32, col: u32) -> vec4<f32> {
    let last = at + p.n - 1u - col;
    return vec4<f32>(relu_output[min(at, last)], relu_output[min(at + 1u, last)],
                     relu_output[min(at + 2u, last)], relu_output[min(at + 3u, last)]);
}

// v where y > 0.
fn finish4(at: u32, v: vec4<f32>, y: vec4<f32>) -> vec4<f32> {
    return select(vec4<f32>(0.0), v, y > vec4<f32>(0.0));
}
