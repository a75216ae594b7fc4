// The f16 copy's source read one value at a time (shaders/matmul_operand_f16.wgsl): f32
// values, or halves two to a word (SOURCE_F16), at any offset and row stride.

@group(0) @binding(1) var<storage, read> x: array<u32>;

override SOURCE_F16: bool;

// Source element i where column `col` is inside the row, else 0. Past the buffer's last
// element (`last`) it loads that one and drops it: a load without a branch, so that an
// invocation's 8 are in flight at once.
fn value_at(i: u32, col: u32, last: u32) -> f32 {
    let at = min(i, last);
    if (SOURCE_F16) {
        return select(0.0, unpack2x16float(x[at >> 1u])[at & 1u], col < p.cols);
    }
    return select(0.0, bitcast<f32>(x[at]), col < p.cols);
}

fn eight_values(start: u32, col: u32) -> Eight {
    let last = select(arrayLength(&x) - 1u, 2u * arrayLength(&x) - 1u, SOURCE_F16);
    var v: array<f32, 8>;
    for (var j = 0u; j < 8u; j++) {
        v[j] = value_at(start + j, col + j, last);
    }
    return Eight(vec4<f32>(v[0], v[1], v[2], v[3]), vec4<f32>(v[4], v[5], v[6], v[7]));
}
