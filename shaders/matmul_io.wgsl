// The matmul inputs as f32s, with edge-safe loads (see matmul_out.wgsl).

//#include matmul_out

@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;

// op(A)[row, kk], 0 past the edges.
fn load_a(base: u32, row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) { return 0.0; }
    if (TA) { return a[base + kk * p.a_row_stride + row]; }
    return a[base + row * p.a_row_stride + kk];
}

// op(B)[kk, col], 0 past the edges.
fn load_b(base: u32, kk: u32, col: u32) -> f32 {
    if (col >= p.n || kk >= p.k) { return 0.0; }
    if (TB) { return b[base + col * p.b_row_stride + kk]; }
    return b[base + kk * p.b_row_stride + col];
}
