// The f16 copy's source read as vec4s (shaders/matmul_operand_f16.wgsl): f32 values whose
// rows and matrices start at multiples of 4, so that an invocation's 8 values (from a
// multiple of 8 in its row) are two aligned vec4 loads.

@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;

// Past the buffer's last vec4 the load reads that one, and columns past the row's end are
// zeros: loads without a branch.
fn eight_values(start: u32, col: u32) -> Eight {
    let last = arrayLength(&x) - 1u;
    let low = x[min(start / 4u, last)];
    let high = x[min(start / 4u + 1u, last)];
    let cols = vec4<u32>(col) + vec4<u32>(0u, 1u, 2u, 3u);
    let row_end = vec4<u32>(p.cols);
    return Eight(select(vec4<f32>(0.0), low, cols < row_end),
                 select(vec4<f32>(0.0), high, cols + vec4<u32>(4u) < row_end));
}
