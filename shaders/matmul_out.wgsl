// What every matmul kernel shares: C = op(A) · op(B) (+ a bias per column) (+ a residual of
// C's shape) batched, op = transpose when TA / TB (read in place), its parameters, its output
// and the edge-safe store. The inputs A and B are bindings 1 and 2, declared by matmul_io.wgsl
// (as f32s) or by the kernel itself; the bias, if any, is binding 3, the residual follows
// (RES) and C follows the inputs (OUT).

struct Params {
    m: u32,
    n: u32,
    k: u32,
    a_batch_stride: u32,
    b_batch_stride: u32,
    // K cut into `parts` chunks of `k_chunk` (matmul_small.wgsl alone; 1 part elsewhere).
    k_chunk: u32,
    parts: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding({{OUT}}) var<storage, read_write> c: array<f32>;

//#include {{BIAS}}
//#include {{RESIDUAL}}

override TA: bool;
override TB: bool;

// C[row, col..col + 4] = product + bias + residual, masked at the edges.
fn store(base: u32, row: u32, col: u32, product: vec4<f32>) {
    if (row >= p.m) { return; }
    let at = base + row * p.n + col;
    let v = product + bias4(col) + residual4(at, col);
    if (col < p.n) { c[at] = v.x; }
    if (col + 1u < p.n) { c[at + 1u] = v.y; }
    if (col + 2u < p.n) { c[at + 2u] = v.z; }
    if (col + 3u < p.n) { c[at + 3u] = v.w; }
}
