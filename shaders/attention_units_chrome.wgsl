// The causal attention kernels' tiles and matrices (attention_coop_common.wgsl) in Chrome:
// its subgroup matrices (src/gpu/subgroup_matrix.rs), which load from and store to arrays of
// their own component type, so the tiles are untyped workgroup memory (WGSL's buffer_view, as
// in matmul_subgroup_matrix.wgsl): read and written by the lanes as vec4s, by the matrices as
// halves or floats. `at` is a vec4's index; the offsets and strides below are in values.

//#include subgroup_matrix_types

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

// A 16 × 16 from vec4 `at`, rows ROW4 vec4s apart, read by rows or (transposed) by columns,
// through a view that starts there and spans what one load reads: the load's offset, stride
// and array length are then constants, which Chrome leaves unchecked, where it checks a load at
// an offset computed at run time against its array's end and predicates its offset and stride
// (docs/log/products.md, "The fused attention in Chrome's dialect, and Chrome's checks"). The
// view's own offset Chrome clamps into its buffer, which every load's span lies within.
const HALVES_SPAN: u32 = 15u * ROW4 * 4u + 16u;
const FLOATS_SPAN: u32 = 15u * F32_ROW4 * 4u + 16u;

fn blocks_left(at: u32) -> Left {
    let view = bufferView<array<f16, HALVES_SPAN>>(&blocks, at * 8u);
    return subgroupMatrixLoad<Left, row_major>(view, 0u, ROW4 * 4u);
}

fn blocks_right(at: u32) -> Right {
    let view = bufferView<array<f16, HALVES_SPAN>>(&blocks, at * 8u);
    return subgroupMatrixLoad<Right, row_major>(view, 0u, ROW4 * 4u);
}

fn blocks_right_transposed(at: u32) -> Right {
    let view = bufferView<array<f16, HALVES_SPAN>>(&blocks, at * 8u);
    return subgroupMatrixLoad<Right, col_major>(view, 0u, ROW4 * 4u);
}

fn h_tile_left(at: u32) -> Left {
    let view = bufferView<array<f16, HALVES_SPAN>>(&h_tile, at * 8u);
    return subgroupMatrixLoad<Left, row_major>(view, 0u, ROW4 * 4u);
}

fn s_tile_store(acc: Sum, at: u32) {
    let view = bufferView<array<f32, FLOATS_SPAN>>(&s_tile, at * 16u);
    subgroupMatrixStore<row_major>(view, 0u, acc, F32_ROW4 * 4u);
}
