// What every matmul kernel shares: C = op(A) · op(B) (+ a bias per column) (+ a residual of
// C's shape) batched, op = transpose when TA / TB (read in place), its parameters, its output
// and the edge-safe store (STORE: matmul_store_f32.wgsl or _vec4). The inputs A and B are
// bindings 1 and 2, declared by matmul_io.wgsl (as f32s) or by the kernel itself; the bias, if
// any, is binding 3, the residual follows (RES) and C follows the inputs (OUT).

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

//#include {{BIAS}}
//#include {{RESIDUAL}}
//#include {{STORE}}

override TA: bool;
override TB: bool;
