// The matmul inputs as vec4s of f32 (the tiled kernels: matmul.wgsl, matmul_coop.wgsl; B
// stored as f32 or as f16: B_TYPE): a vec4 at a time without a branch, or one value at a time,
// edge-safe (see matmul_out.wgsl).
//#slots B_TYPE

@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
//#include matmul_b4_{{B_TYPE}}

// The vec4 at `at` of A or B, or zeros where not `inside`: the load is always made (at 0
// outside) and its value selected. A branch around each load (`if outside { return 0 }`) makes
// loads wait for each other: Chrome's weight gradients took 463 µs a call on an H200 with it
// against 389 (docs/BENCHMARKS.md, "Loads without a branch"), the matrix units' matmul_4096
// 3.58 ms against 1.89 natively.
fn a_vec4(at: u32, inside: bool) -> vec4<f32> {
    return select(vec4<f32>(0.0), a[select(0u, at, inside)], inside);
}

fn b_vec4(at: u32, inside: bool) -> vec4<f32> {
    return select(vec4<f32>(0.0), b_stored4(select(0u, at, inside)), inside);
}

// op(A)[row, kk] and op(B)[kk, col] one value at a time, 0 past the edges.
fn load_a(base: u32, row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) { return 0.0; }
    let i = select(base + row * p.a_row_stride + kk, base + kk * p.a_row_stride + row, TA);
    return a[i >> 2u][i & 3u];
}

fn load_b(base: u32, kk: u32, col: u32) -> f32 {
    if (col >= p.n || kk >= p.k) { return 0.0; }
    let i = select(base + kk * p.b_row_stride + col, base + col * p.b_row_stride + kk, TB);
    return b_stored4(i >> 2u)[i & 3u];
}
