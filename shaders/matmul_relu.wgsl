// C through ReLU as it is stored (a linear layer followed by ReLU, src/ops/linear.rs
// `Tensor::linear_relu`), with no pass of its own; nothing is bound for it.
fn tail4(at: u32, col: u32) -> vec4<f32> {
    return vec4<f32>(0.0);
}

fn finish4(at: u32, v: vec4<f32>, tail: vec4<f32>) -> vec4<f32> {
    return max(v, vec4<f32>(0.0));
}
