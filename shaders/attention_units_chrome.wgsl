enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;

// The causal attention kernels' tiles and matrices (attention_coop_common.wgsl) in Chrome:
// its subgroup matrices (src/gpu/subgroup_matrix.rs), which load from and store to arrays of
// their own component type, so the tiles are untyped workgroup memory (WGSL's buffer_view, as
// in matmul_subgroup_matrix.wgsl): read and written by the lanes as vec4s, by the matrices as
// halves or floats. `at` is a vec4's index; the offsets and strides below are in values.

alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Sum = subgroup_matrix_result<f32, 16, 16>;

var<workgroup> s_tile: buffer<S_TILE4 * 16u>;
var<workgroup> h_tile: buffer<BLOCK4 * 8u>;
var<workgroup> blocks: buffer<2u * BLOCK4 * 8u>;

fn multiply_add(a: Left, b: Right, acc: Sum) -> Sum {
    return subgroupMatrixMultiplyAccumulate(a, b, acc);
}

fn s_tile_get4(at: u32) -> vec4<f32> {
    return bufferView<array<vec4<f32>, S_TILE4>>(&s_tile, 0u)[at];
}

fn h_tile_get4(at: u32) -> vec4<f16> {
    return bufferView<array<vec4<f16>, BLOCK4>>(&h_tile, 0u)[at];
}

fn h_tile_put4(at: u32, v: vec4<f16>) {
    bufferView<array<vec4<f16>, BLOCK4>>(&h_tile, 0u)[at] = v;
}

fn blocks_put4(at: u32, v: vec4<f16>) {
    bufferView<array<vec4<f16>, 2u * BLOCK4>>(&blocks, 0u)[at] = v;
}

// A 16 × 16 from vec4 `at`, rows ROW4 vec4s apart, read by rows or (transposed) by columns.
fn blocks_left(at: u32) -> Left {
    let view = bufferView<array<f16, 8u * BLOCK4>>(&blocks, 0u);
    return subgroupMatrixLoad<Left, row_major>(view, at * 4u, ROW4 * 4u);
}

fn blocks_right(at: u32) -> Right {
    let view = bufferView<array<f16, 8u * BLOCK4>>(&blocks, 0u);
    return subgroupMatrixLoad<Right, row_major>(view, at * 4u, ROW4 * 4u);
}

fn blocks_right_transposed(at: u32) -> Right {
    let view = bufferView<array<f16, 8u * BLOCK4>>(&blocks, 0u);
    return subgroupMatrixLoad<Right, col_major>(view, at * 4u, ROW4 * 4u);
}

fn h_tile_left(at: u32) -> Left {
    let view = bufferView<array<f16, 4u * BLOCK4>>(&h_tile, 0u);
    return subgroupMatrixLoad<Left, row_major>(view, at * 4u, ROW4 * 4u);
}

fn s_tile_store(acc: Sum, at: u32) {
    let floats = bufferView<array<f32, 4u * S_TILE4>>(&s_tile, 0u);
    subgroupMatrixStore<row_major>(floats, at * 4u, acc, F32_ROW4 * 4u);
}

// Rows of the kernel's f32 results (its output, or the gradients of q, k and v) from value
// `at`, `stride` values apart.
fn results_store(acc: Sum, at: u32, stride: u32) {
    subgroupMatrixStore<row_major>(&results, at, acc, stride);
}
