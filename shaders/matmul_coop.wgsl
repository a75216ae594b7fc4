enable f16;
enable wgpu_cooperative_matrix;

// Batched C = op(A) · op(B) on the GPU's matrix units (mixed precision): A and B are read as
// f32, rounded to f16 as they are staged in workgroup memory, and multiplied 16 × 16 × 16 at a
// time by cooperative matrices that add in f32. Each workgroup of 256 invocations computes a
// 128 × 128 tile of C through 32-deep slices; its 8 subgroups of 32 (a run gets this kernel
// only where the adapter's subgroups are always 32 wide: src/gpu/precision.rs) each own
// 64 rows × 32 columns of it, 4 × 2 accumulators. C leaves through workgroup memory, one
// accumulator at a time, so that the shared store (matmul_out: bias, residual, GELU's or
// ReLU's derivative) sees vec4s of C as in the f32 kernels.
//
// Values past f16's range (65,504) become infinities, and values below 6e-8 zeros: mixed
// precision's cost, which the f32 sums and the f32 tensors around the product keep to the
// operands' rounding.

//#include matmul_out

//#include matmul_vec4_io

override VEC4_A: bool;
override VEC4_B: bool;
// With A transposed and fetched as vec4s (a weight gradient, A the output's gradient), the
// workgroups of the first column of tiles also sum op(A)'s rows in f32, the bias's gradient,
// and store the sums after C's matrix (src/ops/matmul/bias_grad.rs), as matmul.wgsl does.
override ROW_SUMS: bool;

const DEPTH: u32 = 32u;
// The staged tiles' rows, 8 halves (16 bytes) longer than their data, so that the matrix
// loads of successive rows start in different banks.
const A_STRIDE: u32 = DEPTH + 8u;
const B_STRIDE: u32 = 128u + 8u;
// op(A)'s slice as [row][depth], op(B)'s as [depth][column].
var<workgroup> a_tile: array<f16, 5120>;
var<workgroup> b_tile: array<f16, 4352>;
// One 16 × 16 accumulator of each subgroup on its way out.
var<workgroup> c_tile: array<f32, 2048>;

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

// Slot s's values rounded to f16 in the A tile.
fn put_a(s: u32, v: vec4<f32>) {
    if (VEC4_A && TA) {
        let d = s / 32u;
        let r = (s % 32u) * 4u;
        a_tile[r * A_STRIDE + d] = f16(v.x);
        a_tile[(r + 1u) * A_STRIDE + d] = f16(v.y);
        a_tile[(r + 2u) * A_STRIDE + d] = f16(v.z);
        a_tile[(r + 3u) * A_STRIDE + d] = f16(v.w);
        return;
    }
    let at = (s / 8u) * A_STRIDE + (s % 8u) * 4u;
    a_tile[at] = f16(v.x);
    a_tile[at + 1u] = f16(v.y);
    a_tile[at + 2u] = f16(v.z);
    a_tile[at + 3u] = f16(v.w);
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
    if (VEC4_B && TB) {
        let c = s / 8u;
        let d = (s % 8u) * 4u;
        b_tile[d * B_STRIDE + c] = f16(v.x);
        b_tile[(d + 1u) * B_STRIDE + c] = f16(v.y);
        b_tile[(d + 2u) * B_STRIDE + c] = f16(v.z);
        b_tile[(d + 3u) * B_STRIDE + c] = f16(v.w);
        return;
    }
    let at = (s / 32u) * B_STRIDE + (s % 32u) * 4u;
    b_tile[at] = f16(v.x);
    b_tile[at + 1u] = f16(v.y);
    b_tile[at + 2u] = f16(v.z);
    b_tile[at + 3u] = f16(v.w);
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

// Accumulator `acc`, rows top.. and columns left.. of C, through the subgroup's 16 × 16 of
// c_tile: each of the subgroup's 32 invocations stores two vec4s of one row. Each subgroup
// has its own 16 × 16, but WGSL has no barrier for a subgroup's memory: the workgroup's is
// used, every subgroup storing its accumulators in the same order.
fn store_block(acc: coop_mat16x16<f32, C>, c_base: u32, top: u32, left: u32, sg: u32,
               lane: u32) {
    coopStoreT(acc, &c_tile[sg * 256u], 16u);
    workgroupBarrier();
    let row = lane / 2u;
    let col = (lane % 2u) * 8u;
    let at = sg * 256u + row * 16u + col;
    let v0 = vec4<f32>(c_tile[at], c_tile[at + 1u], c_tile[at + 2u], c_tile[at + 3u]);
    let v1 = vec4<f32>(c_tile[at + 4u], c_tile[at + 5u], c_tile[at + 6u], c_tile[at + 7u]);
    store(c_base, top + row, left + col, v0);
    store(c_base, top + row, left + col + 4u, v1);
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    let a_base = a_start(wid.z);
    let b_base = b_start(wid.z);
    // The subgroup's block: 2 × 4 blocks of 64 rows × 32 columns.
    let br = (sg / 4u) * 64u;
    let bc = (sg % 4u) * 32u;
    // Named, not an array: an array of cooperative matrices indexed in a loop would be
    // memory, not registers.
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    let sums_rows = ROW_SUMS && wid.x == 0u;
    var sums = vec4<f32>(0.0);
    var next = fetch_slice(a_base, b_base, row0, col0, 0u, tid);
    for (var k0 = 0u; k0 < p.k; k0 += DEPTH) {
        put_slice(tid, next);
        // With A transposed and read as vec4s, an invocation's 4 slots of A are one group of
        // op(A)'s rows.
        if (sums_rows) { sums += next.a0 + next.a1 + next.a2 + next.a3; }
        workgroupBarrier();
        if (k0 + DEPTH < p.k) {
            next = fetch_slice(a_base, b_base, row0, col0, k0 + DEPTH, tid);
        }
        for (var d = 0u; d < DEPTH; d += 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[br * A_STRIDE + d], A_STRIDE);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[(br + 16u) * A_STRIDE + d], A_STRIDE);
            let a2 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[(br + 32u) * A_STRIDE + d], A_STRIDE);
            let a3 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[(br + 48u) * A_STRIDE + d], A_STRIDE);
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[d * B_STRIDE + bc], B_STRIDE);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[d * B_STRIDE + bc + 16u], B_STRIDE);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c20 = coopMultiplyAdd(a2, b0, c20);
            c21 = coopMultiplyAdd(a2, b1, c21);
            c30 = coopMultiplyAdd(a3, b0, c30);
            c31 = coopMultiplyAdd(a3, b1, c31);
        }
        workgroupBarrier();
    }
    let c_base = c_start(wid.z);
    if (sums_rows) { store_row_sums(c_base, row0, tid, sums); }
    let top = row0 + br;
    let left = col0 + bc;
    store_block(c00, c_base, top, left, sg, lane);
    store_block(c01, c_base, top, left + 16u, sg, lane);
    store_block(c10, c_base, top + 16u, left, sg, lane);
    store_block(c11, c_base, top + 16u, left + 16u, sg, lane);
    store_block(c20, c_base, top + 32u, left, sg, lane);
    store_block(c21, c_base, top + 32u, left + 16u, sg, lane);
    store_block(c30, c_base, top + 48u, left, sg, lane);
    store_block(c31, c_base, top + 48u, left + 16u, sg, lane);
}
