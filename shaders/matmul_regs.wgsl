// Batched C = op(A) · op(B) for adapters that emulate a GPU on the CPU (lavapipe,
// SwiftShader): no workgroup memory and no barriers, which are costly there. Each thread owns
// 8 rows × 4 columns of C (8 × 8 when WIDE) in vec4 registers and reads A and B straight from
// memory: on a CPU the loads, not the multiplies, are the cost, and a taller tile reuses each
// loaded B value for 8 rows (measured on lavapipe: 4 rows ran at half the speed). The columns of
// a thread are 8 apart, so that the 8 threads of a workgroup row (which a CPU runs as SIMD
// lanes) read and write neighbouring addresses, and share their rows of A. Rows and columns
// past the edge are clamped on load and masked on store, so the inner loop has no branches.
// Same parameters and bindings as matmul.wgsl.

//#include matmul_io

const WIDE: bool = {{WIDE}};

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

// B[kk, cols] for four columns.
fn b4(base: u32, kk: u32, cols: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(b_at(base, kk, cols.x), b_at(base, kk, cols.y), b_at(base, kk, cols.z), b_at(base, kk, cols.w));
}

// Four columns 8 apart from `col`, clamped to the last column.
fn columns(col: u32) -> vec4<u32> {
    let last = p.n - 1u;
    return vec4<u32>(min(col, last), min(col + 8u, last), min(col + 16u, last), min(col + 24u, last));
}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let span = select(32u, 64u, WIDE);
    let row = gid.y * 8u;
    let col = (gid.x / 8u) * span + gid.x % 8u;
    if (row >= p.m || col >= p.n) { return; }
    let a_base = gid.z * p.a_batch_stride;
    let b_base = gid.z * p.b_batch_stride;
    let last = p.m - 1u;
    let r = array<u32, 8>(row, min(row + 1u, last), min(row + 2u, last), min(row + 3u, last),
        min(row + 4u, last), min(row + 5u, last), min(row + 6u, last), min(row + 7u, last));
    let lo_cols = columns(col);
    let hi_cols = columns(col + 32u);
    var lo0 = vec4<f32>(0.0); var lo1 = vec4<f32>(0.0); var lo2 = vec4<f32>(0.0); var lo3 = vec4<f32>(0.0);
    var lo4 = vec4<f32>(0.0); var lo5 = vec4<f32>(0.0); var lo6 = vec4<f32>(0.0); var lo7 = vec4<f32>(0.0);
    var hi0 = vec4<f32>(0.0); var hi1 = vec4<f32>(0.0); var hi2 = vec4<f32>(0.0); var hi3 = vec4<f32>(0.0);
    var hi4 = vec4<f32>(0.0); var hi5 = vec4<f32>(0.0); var hi6 = vec4<f32>(0.0); var hi7 = vec4<f32>(0.0);
    for (var kk = 0u; kk < p.k; kk++) {
        let lo = b4(b_base, kk, lo_cols);
        let a0 = a_at(a_base, r[0], kk); let a1 = a_at(a_base, r[1], kk);
        let a2 = a_at(a_base, r[2], kk); let a3 = a_at(a_base, r[3], kk);
        let a4 = a_at(a_base, r[4], kk); let a5 = a_at(a_base, r[5], kk);
        let a6 = a_at(a_base, r[6], kk); let a7 = a_at(a_base, r[7], kk);
        lo0 += a0 * lo; lo1 += a1 * lo; lo2 += a2 * lo; lo3 += a3 * lo;
        lo4 += a4 * lo; lo5 += a5 * lo; lo6 += a6 * lo; lo7 += a7 * lo;
        if (WIDE) {
            let hi = b4(b_base, kk, hi_cols);
            hi0 += a0 * hi; hi1 += a1 * hi; hi2 += a2 * hi; hi3 += a3 * hi;
            hi4 += a4 * hi; hi5 += a5 * hi; hi6 += a6 * hi; hi7 += a7 * hi;
        }
    }
    let c_base = gid.z * p.m * p.n;
    store_row(c_base, row, col, lo0); store_row(c_base, row + 1u, col, lo1);
    store_row(c_base, row + 2u, col, lo2); store_row(c_base, row + 3u, col, lo3);
    store_row(c_base, row + 4u, col, lo4); store_row(c_base, row + 5u, col, lo5);
    store_row(c_base, row + 6u, col, lo6); store_row(c_base, row + 7u, col, lo7);
    if (WIDE) {
        let c2 = col + 32u;
        store_row(c_base, row, c2, hi0); store_row(c_base, row + 1u, c2, hi1);
        store_row(c_base, row + 2u, c2, hi2); store_row(c_base, row + 3u, c2, hi3);
        store_row(c_base, row + 4u, c2, hi4); store_row(c_base, row + 5u, c2, hi5);
        store_row(c_base, row + 6u, c2, hi6); store_row(c_base, row + 7u, c2, hi7);
    }
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
