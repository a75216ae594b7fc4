// What every matmul kernel shares: C = op(A) · op(B) batched, op = transpose when TA / TB
// (read in place), its parameters and bindings, and edge-safe loads and stores.

struct Params {
    m: u32,
    n: u32,
    k: u32,
    a_batch_stride: u32,
    b_batch_stride: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;

const TA: bool = {{TA}};
const TB: bool = {{TB}};

// op(A)[row, kk], 0 past the edges.
fn load_a(base: u32, row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) { return 0.0; }
    if (TA) { return a[base + kk * p.m + row]; }
    return a[base + row * p.k + kk];
}

// op(B)[kk, col], 0 past the edges.
fn load_b(base: u32, kk: u32, col: u32) -> f32 {
    if (col >= p.n || kk >= p.k) { return 0.0; }
    if (TB) { return b[base + col * p.k + kk]; }
    return b[base + kk * p.n + col];
}

// C[row, col..col + 4] = v, masked at the edges.
fn store(base: u32, row: u32, col: u32, v: vec4<f32>) {
    if (row >= p.m) { return; }
    let at = base + row * p.n + col;
    if (col < p.n) { c[at] = v.x; }
    if (col + 1u < p.n) { c[at + 1u] = v.y; }
    if (col + 2u < p.n) { c[at + 2u] = v.z; }
    if (col + 3u < p.n) { c[at + 3u] = v.w; }
}
