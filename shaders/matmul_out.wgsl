// What every matmul kernel shares: C = op(A) · op(B) (+ a bias per column) (+ a residual of
// C's shape, or × GELU's derivative at an input of C's shape) batched, op = transpose when
// TA / TB (read in place), its parameters, its output and the edge-safe store (STORE:
// matmul_store_f32.wgsl, _vec4 or _f16). The inputs A and B are bindings 1 and 2, declared by
// matmul_io.wgsl (as f32s) or by the kernel itself; the bias, if any, is binding 3, the
// residual or GELU's input follows (RES, declared by the RESIDUAL slot's include, which also
// gives `finish4`) and C follows the inputs (OUT).
//#slots BIAS RESIDUAL STORE RES OUT

struct Params {
    m: u32,
    n: u32,
    k: u32,
    a_batch_stride: u32,
    b_batch_stride: u32,
    // K cut into `parts` chunks of `k_chunk` (matmul_small.wgsl alone; 1 part elsewhere).
    k_chunk: u32,
    parts: u32,
    // Where each matrix lies (src/ops/matmul_layout.rs): batch z is head z % heads of group
    // z / heads, its matrix starts at offset + group × batch stride + head × head stride, and
    // its stored rows lie row stride apart. Dense operands have one head and rows as long as
    // the matrix's; attention reads its heads in place with several.
    heads: u32,
    a_offset: u32,
    a_head_stride: u32,
    a_row_stride: u32,
    b_offset: u32,
    b_head_stride: u32,
    b_row_stride: u32,
    c_offset: u32,
    c_batch_stride: u32,
    c_head_stride: u32,
    c_row_stride: u32,
    // With ROW_SUMS, where op(A)'s row sums go: this far after the start of each matrix of C.
    sums_offset: u32,
    // With DROPOUT (matmul_residual.wgsl), the dropout of C before the residual is added.
    drop_seed: u32,
    drop_p: f32,
    drop_scale: f32,
}
@group(0) @binding(0) var<uniform> p: Params;

// Where batch z's matrix of A, B or C starts.
fn a_start(z: u32) -> u32 {
    return p.a_offset + (z / p.heads) * p.a_batch_stride + (z % p.heads) * p.a_head_stride;
}

fn b_start(z: u32) -> u32 {
    return p.b_offset + (z / p.heads) * p.b_batch_stride + (z % p.heads) * p.b_head_stride;
}

fn c_start(z: u32) -> u32 {
    return p.c_offset + (z / p.heads) * p.c_batch_stride + (z % p.heads) * p.c_head_stride;
}

//#include {{BIAS}}
//#include {{RESIDUAL}}
//#include {{STORE}}

// C[row, col..col + 4] = finish4(product + bias) (the tail: a residual, GELU's derivative or
// ReLU), through the STORE slot's `store_with`, nothing past the edges.
fn store(base: u32, row: u32, col: u32, product: vec4<f32>) {
    store_with(base, row, col, product, tail_at(base, row, col));
}

// What the tail reads for C[row, col..col + 4] (tail4), or zeros past the edges.
fn tail_at(base: u32, row: u32, col: u32) -> vec4<f32> {
    if (row >= p.m || col >= p.n) { return vec4<f32>(0.0); }
    return tail4(base + row * p.c_row_stride + col, col);
}

override TA: bool;
override TB: bool;
