// The matmul inputs as f32s (B as f32 or as f16: B_TYPE), with edge-safe loads (see
// matmul_out.wgsl).
//#slots B_TYPE

//#include matmul_out

@group(0) @binding(1) var<storage, read> a: array<f32>;
//#include matmul_b_{{B_TYPE}}

// op(A)[row, kk], 0 past the edges.
fn load_a(base: u32, row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) { return 0.0; }
    if (TA) { return a[base + kk * p.a_row_stride + row]; }
    return a[base + row * p.a_row_stride + kk];
}

// op(B)[kk, col], 0 past the edges.
fn load_b(base: u32, kk: u32, col: u32) -> f32 {
    if (col >= p.n || kk >= p.k) { return 0.0; }
    if (TB) { return b_stored(base + col * p.b_row_stride + kk); }
    return b_stored(base + kk * p.b_row_stride + col);
}
