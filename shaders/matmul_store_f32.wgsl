// C stored one value at a time, each column checked against the row's end: rows of any length.

@group(0) @binding({{OUT}}) var<storage, read_write> c: array<f32>;

// C[row, col..col + 4] = finish4(product + bias, tail), each column checked against the row's
// end; `tail` is what `tail_at` (matmul_out.wgsl) read, ahead of the store or at it (`store`).
fn store_with(base: u32, row: u32, col: u32, product: vec4<f32>, tail: vec4<f32>) {
    if (row >= p.m) { return; }
    let at = base + row * p.c_row_stride + col;
    let v = finish4(at, product + bias4(row, col), tail);
    if (col < p.n) { c[at] = v.x; }
    if (col + 1u < p.n) { c[at + 1u] = v.y; }
    if (col + 2u < p.n) { c[at + 2u] = v.z; }
    if (col + 3u < p.n) { c[at + 3u] = v.w; }
}

// op(A)'s sums of rows row..row + 4 (ROW_SUMS), after C's matrix, those past row m left out.
fn store_sums(base: u32, row: u32, sums: vec4<f32>) {
    let at = base + p.sums_offset + row;
    if (row < p.m) { c[at] = sums.x; }
    if (row + 1u < p.m) { c[at + 1u] = sums.y; }
    if (row + 2u < p.m) { c[at + 2u] = sums.z; }
    if (row + 3u < p.m) { c[at + 3u] = sums.w; }
}
