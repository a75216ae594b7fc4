// Batched C = op(A) · op(B) for adapters that emulate a GPU on the CPU (lavapipe,
// SwiftShader): no workgroup memory and no barriers, which are costly there. A CPU runs the 8
// invocations of a workgroup as the lanes of one SIMD vector and loads each lane's value on
// its own (a gather), so the loads, not the multiply-adds, are the cost: each lane keeps a tile
// of ROWS × COLS outputs in registers, so that every value it loads feeds ROWS or COLS
// multiply-adds (on lavapipe, 16 × 16 ran 2-3× as fast as 8 × 4). The lanes' rows are
// interleaved (lane, lane + 8, ...), each lane's columns contiguous. The body is unrolled
// (`//#repeat`, lane row i and vec4 of columns j), each register a named variable, since arrays
// indexed in loops would live in memory. Rows and columns past the edge are clamped on load and
// masked on store, so the inner loop has no branches. Same parameters and bindings as
// matmul.wgsl; COLS is 4 × VECS. K is split past 32,768 (src/ops/matmul/plan.rs says why).
//#slots ROWS COLS VECS

//#include matmul_io

// A[row, kk] as op(A) sees it.
fn a_at(base: u32, row: u32, kk: u32) -> f32 {
    if (TA) { return a[base + kk * p.a_row_stride + row]; }
    return a[base + row * p.a_row_stride + kk];
}

// B[kk, col] as op(B) sees it.
fn b_at(base: u32, kk: u32, col: u32) -> f32 {
    if (TB) { return b_stored(base + col * p.b_row_stride + kk); }
    return b_stored(base + kk * p.b_row_stride + col);
}

// B[kk, col..col + 4], columns clamped to the last.
fn b4(base: u32, kk: u32, col: u32) -> vec4<f32> {
    let last = p.n - 1u;
    return vec4<f32>(b_at(base, kk, min(col, last)), b_at(base, kk, min(col + 1u, last)),
        b_at(base, kk, min(col + 2u, last)), b_at(base, kk, min(col + 3u, last)));
}

@compute @workgroup_size(8)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
    let row0 = wid.x * 8u * {{ROWS}}u + lane;
    let col0 = wid.y * {{COLS}}u;
    // With K split (parts > 1), workgroup_id.z = batch × parts + part, and C takes the
    // partial products side by side.
    let batch = wid.z / p.parts;
    let a_base = a_start(batch);
    let b_base = b_start(batch);
    let c_base = c_start(wid.z);
    let k_first = (wid.z % p.parts) * p.k_chunk;
    let k_last = min(p.k, k_first + p.k_chunk);
    let last_row = p.m - 1u;
    //#repeat {{ROWS}} i
    let r#i = min(row0 + 8u * #iu, last_row);
    //#end
    //#repeat {{ROWS}} i
    //#repeat {{VECS}} j
    var acc#i_#j = vec4<f32>(0.0);
    //#end
    //#end
    for (var kk = k_first; kk < k_last; kk++) {
        //#repeat {{ROWS}} i
        let av#i = vec4<f32>(a_at(a_base, r#i, kk));
        //#end
        //#repeat {{VECS}} j
        let bv#j = b4(b_base, kk, col0 + 4u * #ju);
        //#end
        //#repeat {{ROWS}} i
        //#repeat {{VECS}} j
        acc#i_#j = fma(av#i, bv#j, acc#i_#j);
        //#end
        //#end
    }
    //#repeat {{ROWS}} i
    //#repeat {{VECS}} j
    store(c_base, row0 + 8u * #iu, col0 + 4u * #ju, acc#i_#j);
    //#end
    //#end
}
