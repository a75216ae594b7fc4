// C stored a vec4 at a time, for rows a multiple of 4 long whose kernel hands `store` columns
// in fours from a multiple of 4 (the tiled kernels): one store instead of four, and one check.

@group(0) @binding({{OUT}}) var<storage, read_write> c: array<vec4<f32>>;

// C[row, col..col + 4] = finish4(product + bias, tail), in one vec4 store; `tail` is what
// `tail_at` (matmul_out.wgsl) read, ahead of the store or at it (`store`).
fn store_with(base: u32, row: u32, col: u32, product: vec4<f32>, tail: vec4<f32>) {
    if (row >= p.m || col >= p.n) { return; }
    let at = base + row * p.c_row_stride + col;
    c[at >> 2u] = finish4(at, product + bias4(row, col), tail);
}

// op(A)'s sums of rows row..row + 4 (ROW_SUMS), after C's matrix; the layout leaves room for
// the vec4 that crosses row m.
fn store_sums(base: u32, row: u32, sums: vec4<f32>) {
    if (row >= p.m) { return; }
    c[(base + p.sums_offset + row) >> 2u] = sums;
}
