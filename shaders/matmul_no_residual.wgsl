// No residual: C is the product (and bias) alone, and nothing else is read.
fn tail4(at: u32, col: u32) -> vec4<f32> {
    return vec4<f32>(0.0);
}

fn finish4(at: u32, v: vec4<f32>, tail: vec4<f32>) -> vec4<f32> {
    return v;
}
