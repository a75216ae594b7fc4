// C stored in f16, 4 values a store, for the f16 kernels' rows of a multiple of 8 (whole
// packets for the products that read C next as it is: src/ops/matmul/operand_f16.rs): a
// value that only readers of f16 take (products, the fused attention), made in f16 where its
// f32 values would only be copied or rounded to f16 (src/ops/matmul/mod.rs,
// `Epilogue::f16_store`). Rounded and packed as the copies are.

//#include half_packing

@group(0) @binding({{OUT}}) var<storage, read_write> c: array<vec2<u32>>;

// C[row, col..col + 4] = finish4(product + bias, tail), rounded to f16, in one store of 4
// halves; `tail` is what `tail_at` (matmul_out.wgsl) read, ahead of the store or at it
// (`store`).
fn store_with(base: u32, row: u32, col: u32, product: vec4<f32>, tail: vec4<f32>) {
    if (row >= p.m || col >= p.n) { return; }
    let at = base + row * p.c_row_stride + col;
    let v = finish4(at, product + bias4(row, col), tail);
    c[at >> 2u] = vec2<u32>(packed_halves(v.xy), packed_halves(v.zw));
}

// op(A)'s sums of rows (ROW_SUMS), in f16 too: never run (run.rs's `c_store` keeps C in f32
// where row sums follow it), but the kernels name it.
fn store_sums(base: u32, row: u32, sums: vec4<f32>) {
    if (row >= p.m) { return; }
    c[(base + p.sums_offset + row) >> 2u] = vec2<u32>(packed_halves(sums.xy), packed_halves(sums.zw));
}
