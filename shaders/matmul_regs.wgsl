// Batched C = op(A) · op(B) for adapters that emulate a GPU on the CPU (lavapipe,
// SwiftShader): no workgroup memory and no barriers, which are costly there. Each thread owns
// 4 rows × 4 columns of C in four vec4 registers and reads A and B straight from memory. The
// columns of a thread are 8 apart, so that the 8 threads of a workgroup row (which a CPU runs
// as SIMD lanes) read and write neighbouring addresses, and share their rows of A. Rows and
// columns past the edge are clamped on load and masked on store, so the inner loop has no
// branches. Same parameters and bindings as matmul.wgsl.

//#include matmul_io

// A[row, kk] as op(A) sees it.
fn a_at(base: u32, row: u32, kk: u32) -> f32 {
    if (TA) { return a[base + kk * p.m + row]; }
    return a[base + row * p.k + kk];
}

// B[kk, col] as op(B) sees it.
fn b_at(base: u32, kk: u32, col: u32) -> f32 {
    if (TB) { return b[base + col * p.k + kk]; }
    return b[base + kk * p.n + col];
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.y * 4u;
    let col = (gid.x / 8u) * 32u + gid.x % 8u;
    if (row >= p.m || col >= p.n) { return; }
    let a_base = gid.z * p.a_batch_stride;
    let b_base = gid.z * p.b_batch_stride;
    let r = vec4<u32>(row, min(row + 1u, p.m - 1u), min(row + 2u, p.m - 1u), min(row + 3u, p.m - 1u));
    let cl = vec4<u32>(col, min(col + 8u, p.n - 1u), min(col + 16u, p.n - 1u), min(col + 24u, p.n - 1u));
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var kk = 0u; kk < p.k; kk++) {
        let bv = vec4<f32>(b_at(b_base, kk, cl.x), b_at(b_base, kk, cl.y), b_at(b_base, kk, cl.z), b_at(b_base, kk, cl.w));
        acc0 += a_at(a_base, r.x, kk) * bv;
        acc1 += a_at(a_base, r.y, kk) * bv;
        acc2 += a_at(a_base, r.z, kk) * bv;
        acc3 += a_at(a_base, r.w, kk) * bv;
    }
    let c_base = gid.z * p.m * p.n;
    store_row(c_base, row, col, acc0);
    store_row(c_base, row + 1u, col, acc1);
    store_row(c_base, row + 2u, col, acc2);
    store_row(c_base, row + 3u, col, acc3);
}

// C[row, col], C[row, col + 8], ...: this thread's columns are 8 apart (see above).
fn store_row(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if (row >= p.m) { return; }
    let at = base + row * p.n + col;
    if (col < p.n) { c[at] = v.x; }
    if (col + 8u < p.n) { c[at + 8u] = v.y; }
    if (col + 16u < p.n) { c[at + 16u] = v.z; }
    if (col + 24u < p.n) { c[at + 24u] = v.w; }
}
