// The staging of the matrix units' product kernels (shaders/matmul_coop.wgsl natively,
// shaders/matmul_subgroup_matrix.wgsl in Chrome), which differ only in how their dialect names
// the matrices and holds the staged tiles: 128 × 128 tiles of C through 32-deep slices, A and B
// read as f32 and rounded to f16 as they are staged, the next slice fetched into registers
// while this one is multiplied, and the bias gradient's row sums in f32. Each dialect declares
// `a_tile` and `b_tile` (TILE_HALVES halves each) and `stage_a`/`stage_b`, which store 4 halves
// at a tile's half `at` (a multiple of 4).

//#include matmul_out

//#include matmul_vec4_io

override VEC4_A: bool;
override VEC4_B: bool;
// With A transposed and fetched as vec4s (a weight gradient, A the output's gradient), the
// workgroups of the first column of tiles also sum op(A)'s rows in f32, the bias's gradient,
// and store the sums after C's matrix (src/ops/matmul/bias_grad.rs), as matmul.wgsl does.
override ROW_SUMS: bool;

// K cut into chunks (p.parts of p.k_chunk, a multiple of DEPTH so that no slice reaches into
// the next chunk): workgroup_id.z = batch × parts + part, and each workgroup multiplies its
// chunk of K into a partial product, C's matrix z (summed after: src/ops/matmul/split_sum.rs).
override SPLIT: bool;

const DEPTH: u32 = 32u;

// The batch of workgroup row z (all of them, unsplit).
fn batch_of(z: u32) -> u32 {
    return select(z, z / p.parts, SPLIT);
}

// Where workgroup row z's chunk of K starts, and where a chunk from `first` ends.
fn chunk_first(z: u32) -> u32 {
    return select(0u, (z % p.parts) * p.k_chunk, SPLIT);
}

fn chunk_last(first: u32) -> u32 {
    return select(p.k, min(p.k, first + p.k_chunk), SPLIT);
}
// The staged slices lie as their operands do in memory, so that a fetched vec4 is stored as
// 4 neighbouring halves, never scattered down a column: op(A)'s slice [row][depth], or
// [depth][row] where A is stored [K, M] and fetched as vec4s along M (`a_by_depth`); op(B)'s
// [depth][column], or [column][depth] where B is stored [N, K] and fetched along K
// (`b_by_column`). The matrix loads read the second kind column-major. A row of a slice is 8
// halves (16 bytes) longer than its data, so that the matrix loads of successive rows start in
// different banks. Staged transposed instead (each vec4 scattered down a column of the tile),
// nanochar's f16 step took 27.4 ms natively on an H200 against 24.5 (docs/log/products.md).
const NARROW: u32 = DEPTH + 8u;
const WIDE: u32 = 128u + 8u;
// The larger of the two layouts: 128 rows of NARROW.
const TILE_HALVES: u32 = 128u * NARROW;
// One 16 × 16 accumulator of each subgroup on its way out.
var<workgroup> c_tile: array<f32, 2048>;

fn a_by_depth() -> bool {
    return VEC4_A && TA;
}

fn b_by_column() -> bool {
    return VEC4_B && TB;
}

// The components of a vec4 that runs along K from `kk`, those past K zeroed: a stored row
// longer than K holds other data there, which as f16 could be infinite (and infinity × 0 is
// NaN).
fn within_k(v: vec4<f32>, kk: u32) -> vec4<f32> {
    let inside = vec4<u32>(kk, kk + 1u, kk + 2u, kk + 3u) < vec4<u32>(p.k);
    return select(vec4<f32>(0.0), v, inside);
}

// What slot s (0..1024) of the A slice holds: 4 values of op(A), fetched as one vec4 where A's
// rows allow. With A stored [K, M] and read so, op(A)'s rows 4 × (s % 32).. at depth s / 32;
// else row s / 8 at depths 4 × (s % 8)..
fn fetch_a(base: u32, row0: u32, k0: u32, s: u32) -> vec4<f32> {
    if (VEC4_A && TA) {
        let kk = k0 + s / 32u;
        let row = row0 + (s % 32u) * 4u;
        let inside = (kk < p.k) & (row < p.m);
        return a_vec4((base + kk * p.a_row_stride + row) >> 2u, inside);
    }
    let row = row0 + s / 8u;
    let kk = k0 + (s % 8u) * 4u;
    if (VEC4_A) {
        let inside = (kk < p.k) & (row < p.m);
        return within_k(a_vec4((base + row * p.a_row_stride + kk) >> 2u, inside), kk);
    }
    return vec4<f32>(load_a(base, row, kk), load_a(base, row, kk + 1u), load_a(base, row, kk + 2u),
                     load_a(base, row, kk + 3u));
}

// Slot s's values rounded to f16 in the A tile, where they lie in memory.
fn put_a(s: u32, v: vec4<f32>) {
    let at = select((s / 8u) * NARROW + (s % 8u) * 4u, (s / 32u) * WIDE + (s % 32u) * 4u,
                    a_by_depth());
    stage_a(at, vec4<f16>(v));
}

// The same for B: with B stored [N, K] and read so, column s / 8 at depths 4 × (s % 8)..; else
// columns 4 × (s % 32).. at depth s / 32.
fn fetch_b(base: u32, col0: u32, k0: u32, s: u32) -> vec4<f32> {
    if (VEC4_B && TB) {
        let col = col0 + s / 8u;
        let kk = k0 + (s % 8u) * 4u;
        let inside = (kk < p.k) & (col < p.n);
        return within_k(b_vec4((base + col * p.b_row_stride + kk) >> 2u, inside), kk);
    }
    let kk = k0 + s / 32u;
    let col = col0 + (s % 32u) * 4u;
    if (VEC4_B) {
        let inside = (kk < p.k) & (col < p.n);
        return b_vec4((base + kk * p.b_row_stride + col) >> 2u, inside);
    }
    return vec4<f32>(load_b(base, kk, col), load_b(base, kk, col + 1u), load_b(base, kk, col + 2u),
                     load_b(base, kk, col + 3u));
}

fn put_b(s: u32, v: vec4<f32>) {
    let at = select((s / 32u) * WIDE + (s % 32u) * 4u, (s / 8u) * NARROW + (s % 8u) * 4u,
                    b_by_column());
    stage_b(at, vec4<f16>(v));
}

// An invocation's share of a slice, slots tid + 256 × i of each tile: fetched into registers
// all at once (their loads in flight together), the next slice's while this one is multiplied.
struct Slice { a0: vec4<f32>, a1: vec4<f32>, a2: vec4<f32>, a3: vec4<f32>,
               b0: vec4<f32>, b1: vec4<f32>, b2: vec4<f32>, b3: vec4<f32> }

fn fetch_slice(a_base: u32, b_base: u32, row0: u32, col0: u32, k0: u32, tid: u32) -> Slice {
    return Slice(fetch_a(a_base, row0, k0, tid), fetch_a(a_base, row0, k0, tid + 256u),
                 fetch_a(a_base, row0, k0, tid + 512u), fetch_a(a_base, row0, k0, tid + 768u),
                 fetch_b(b_base, col0, k0, tid), fetch_b(b_base, col0, k0, tid + 256u),
                 fetch_b(b_base, col0, k0, tid + 512u), fetch_b(b_base, col0, k0, tid + 768u));
}

fn put_slice(tid: u32, f: Slice) {
    put_a(tid, f.a0);
    put_a(tid + 256u, f.a1);
    put_a(tid + 512u, f.a2);
    put_a(tid + 768u, f.a3);
    put_b(tid, f.b0);
    put_b(tid + 256u, f.b1);
    put_b(tid + 512u, f.b2);
    put_b(tid + 768u, f.b3);
}

// ROW_SUMS: each invocation summed the 4 rows of group tid % 32 at 1 depth in 8 (its slots'
// depths); the 8 sums of each group are added through c_tile and 32 invocations store them.
fn store_row_sums(c_base: u32, row0: u32, tid: u32, sums: vec4<f32>) {
    c_tile[tid * 4u] = sums.x;
    c_tile[tid * 4u + 1u] = sums.y;
    c_tile[tid * 4u + 2u] = sums.z;
    c_tile[tid * 4u + 3u] = sums.w;
    workgroupBarrier();
    if (tid < 32u) {
        var total = vec4<f32>(0.0);
        for (var j = 0u; j < 8u; j++) {
            let at = (j * 32u + tid) * 4u;
            total += vec4<f32>(c_tile[at], c_tile[at + 1u], c_tile[at + 2u], c_tile[at + 3u]);
        }
        store_sums(c_base, row0 + tid * 4u, total);
    }
    workgroupBarrier();
}
