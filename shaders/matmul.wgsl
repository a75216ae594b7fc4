// Batched C = op(A) · op(B), op = transpose when TA / TB, read in place (no transposed copy).
// Each workgroup of 16×16 threads computes a 128×128 tile of C through 16-deep slices of A and
// B staged in workgroup memory as vec4s (4 rows of A, or 4 columns of B, per element). Each
// thread owns 8 rows × 8 columns of C: rows ty*4.. and 64 + ty*4.., columns tx*4.. and
// 64 + tx*4.., in sixteen vec4 registers named, not indexed, so that bounds checks never
// touch the inner loop's registers; its workgroup reads are 4 vec4 loads per 64 FMAs.
// The next slice is fetched into registers while this one is multiplied (PREFETCH), so that
// global latency hides behind the math. With VEC4_A (A's stored rows a multiple of 4 long) a fetch of
// A is one vec4 along its rows, otherwise four edge-checked values; B likewise with VEC4_B.
// With K split (src/ops/matmul_split.rs), workgroup_id.z = batch × parts + part and each
// workgroup multiplies its chunk of K into a partial product.

//#include matmul_out

//#include matmul_vec4_io

// Whether the fetches of vec4s along the tile's rows (A transposed, B not) load without a
// branch (matmul_vec4_io's a_vec4): with the next slice prefetched it is slower, through either
// compiler (src/ops/matmul/plan.rs says where it is set).
override BRANCHLESS: bool;

// Depths per slice: the multiply below is written out this many times (//#repeat 16), so
// change both together.
const DEPTH: u32 = 16u;
override VEC4_A: bool;
override VEC4_B: bool;
// K split into chunks (p.parts > 1).
override SPLIT: bool;
// What a product of causal attention may skip (src/ops/matmul.rs, `Causal`): 0 nothing, 1 C
// above the diagonal, 2 op(A) right of it (k > row), 3 op(A) left of it (k < row). A constant,
// so that the dense product compiles as before: as a parameter it cost matmul_4096 9 %.
override CAUSAL: u32;
// Whether C has more than 64 columns: with 64 or fewer (attention's heads of 64 times
// probabilities) the right half of each thread's columns is past the edge, and its products
// are left out.
override WIDE: bool;
// With A transposed (a weight gradient, A the output's gradient), the workgroups of the first
// column of tiles also sum op(A)'s rows, the bias's gradient, from the vec4s of 4 rows they
// stage, and store the sums after C's matrix (src/ops/matmul_bias_grad.rs). Each thread's
// sums are kept in workgroup memory, not in registers: one more vec4 register held through the
// loop made nanochar's weight gradients 14 % slower on an H100.
override ROW_SUMS: bool;
var<workgroup> row_sums: array<vec4<f32>, 256>;

// [k][32 groups of 4 rows] and [k][32 groups of 4 columns]: two indices, so that the bounds
// check on the group is the same at every depth and leaves the inner loop.
var<workgroup> a_tile: array<array<vec4<f32>, 32>, DEPTH>;
var<workgroup> b_tile: array<array<vec4<f32>, 32>, DEPTH>;

// Slot s (0..512) of a tile: its depth and group of 4 rows (or columns), in the order that
// keeps global reads coalesced when the 4 run along the stored rows.
fn slot_depth(s: u32, along_depth: bool) -> u32 {
    return select(s / 32u, s % DEPTH, along_depth);
}

fn slot_group(s: u32, along_depth: bool) -> u32 {
    return select(s % 32u, s / DEPTH, along_depth);
}

// What a thread fetches for slot s of the A tile at depth k0. With VEC4_A and A stored [M, K],
// the vec4 runs along k (4 depths of one row, slot s = row * 4 + quarter); else 4 rows at one
// depth, as the tile holds them.
fn fetch_a(base: u32, row0: u32, k0: u32, s: u32) -> vec4<f32> {
    if (VEC4_A) {
        if (TA) {
            let kk = k0 + s / 32u;
            let r = row0 + (s % 32u) * 4u;
            let at = (base + kk * p.a_row_stride + r) >> 2u;
            if (BRANCHLESS) { return a_vec4(at, (kk < p.k) & (r < p.m)); }
            if (kk >= p.k || r >= p.m) { return vec4<f32>(0.0); }
            return a[at];
        }
        let r = row0 + s / 4u;
        let kk = k0 + (s % 4u) * 4u;
        if (r >= p.m || kk >= p.k) { return vec4<f32>(0.0); }
        return a[(base + r * p.a_row_stride + kk) >> 2u];
    }
    let kk = k0 + slot_depth(s, !TA);
    let r = row0 + slot_group(s, !TA) * 4u;
    return vec4<f32>(load_a(base, r, kk), load_a(base, r + 1u, kk), load_a(base, r + 2u, kk),
                     load_a(base, r + 3u, kk));
}

fn put_a(s: u32, v: vec4<f32>) {
    if (VEC4_A && !TA) {
        let r = s / 4u;
        let kk = (s % 4u) * 4u;
        a_tile[kk][r / 4u][r % 4u] = v.x;
        a_tile[kk + 1u][r / 4u][r % 4u] = v.y;
        a_tile[kk + 2u][r / 4u][r % 4u] = v.z;
        a_tile[kk + 3u][r / 4u][r % 4u] = v.w;
        return;
    }
    a_tile[slot_depth(s, !TA)][slot_group(s, !TA)] = v;
}

// The same for B, whose tile holds 4 columns at one depth; with VEC4_B and B stored [N, K] the
// fetched vec4 runs along k.
fn fetch_b(base: u32, col0: u32, k0: u32, s: u32) -> vec4<f32> {
    if (VEC4_B) {
        if (!TB) {
            let kk = k0 + s / 32u;
            let cc = col0 + (s % 32u) * 4u;
            let at = (base + kk * p.b_row_stride + cc) >> 2u;
            if (BRANCHLESS) { return b_vec4(at, (kk < p.k) & (cc < p.n)); }
            if (kk >= p.k || cc >= p.n) { return vec4<f32>(0.0); }
            return b_stored4(at);
        }
        let cc = col0 + s / 4u;
        let kk = k0 + (s % 4u) * 4u;
        if (cc >= p.n || kk >= p.k) { return vec4<f32>(0.0); }
        return b_stored4((base + cc * p.b_row_stride + kk) >> 2u);
    }
    let kk = k0 + slot_depth(s, TB);
    let cc = col0 + slot_group(s, TB) * 4u;
    return vec4<f32>(load_b(base, kk, cc), load_b(base, kk, cc + 1u), load_b(base, kk, cc + 2u),
                     load_b(base, kk, cc + 3u));
}

fn put_b(s: u32, v: vec4<f32>) {
    if (VEC4_B && TB) {
        let cc = s / 4u;
        let kk = (s % 4u) * 4u;
        b_tile[kk][cc / 4u][cc % 4u] = v.x;
        b_tile[kk + 1u][cc / 4u][cc % 4u] = v.y;
        b_tile[kk + 2u][cc / 4u][cc % 4u] = v.z;
        b_tile[kk + 3u][cc / 4u][cc % 4u] = v.w;
        return;
    }
    b_tile[slot_depth(s, TB)][slot_group(s, TB)] = v;
}

// Where an operand's vec4s run along K (A stored [M, K], or B stored [N, K], read as vec4s) the
// tile wants them across rows. With BLOCKS a thread of the first half (A) or of the second (B)
// fetches a block of 4 rows × 4 depths as four vec4s and stores it as four vec4s, transposed
// in registers; without, each value goes into its component of a tile vec4 (put_a, put_b).
// src/ops/matmul.rs sets BLOCKS in the browser only: on an H100 it took nanochar's page step
// from 58 to 53 ms (Tint), and natively it cost 6 % (naga).
override BLOCKS: bool;
// Whether the next slice is fetched into registers while this one is multiplied (above); if
// not, each slice is fetched as it begins, which holds fewer registers through the multiply
// (src/ops/matmul_plan.rs says where that is faster).
override PREFETCH: bool;
fn a_blocks() -> bool { return BLOCKS && VEC4_A && !TA; }
fn b_blocks() -> bool { return BLOCKS && VEC4_B && TB; }

// What a thread fetches of a tile for one slice: two slots, or a block, in v0..v3.
struct Fetched { v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32> }

// Row (or column) `j` of block `t` (0..128: 32 groups of 4 rows, 4 quarters of the slice).
fn fetch_a_block(base: u32, row0: u32, k0: u32, t: u32, j: u32) -> vec4<f32> {
    let r = row0 + (t / 4u) * 4u + j;
    let kk = k0 + (t % 4u) * 4u;
    if (r >= p.m || kk >= p.k) { return vec4<f32>(0.0); }
    return a[(base + r * p.a_row_stride + kk) >> 2u];
}

fn fetch_b_block(base: u32, col0: u32, k0: u32, t: u32, j: u32) -> vec4<f32> {
    let cc = col0 + (t / 4u) * 4u + j;
    let kk = k0 + (t % 4u) * 4u;
    if (cc >= p.n || kk >= p.k) { return vec4<f32>(0.0); }
    return b_stored4((base + cc * p.b_row_stride + kk) >> 2u);
}

fn fetch_a_all(base: u32, row0: u32, k0: u32, tid: u32) -> Fetched {
    let zero = vec4<f32>(0.0);
    if (!a_blocks()) {
        return Fetched(fetch_a(base, row0, k0, tid), fetch_a(base, row0, k0, tid + 256u), zero, zero);
    }
    if (tid >= 128u) { return Fetched(zero, zero, zero, zero); }
    return Fetched(fetch_a_block(base, row0, k0, tid, 0u), fetch_a_block(base, row0, k0, tid, 1u),
                   fetch_a_block(base, row0, k0, tid, 2u), fetch_a_block(base, row0, k0, tid, 3u));
}

fn fetch_b_all(base: u32, col0: u32, k0: u32, tid: u32) -> Fetched {
    let zero = vec4<f32>(0.0);
    if (!b_blocks()) {
        return Fetched(fetch_b(base, col0, k0, tid), fetch_b(base, col0, k0, tid + 256u), zero, zero);
    }
    if (tid < 128u) { return Fetched(zero, zero, zero, zero); }
    let t = tid - 128u;
    return Fetched(fetch_b_block(base, col0, k0, t, 0u), fetch_b_block(base, col0, k0, t, 1u),
                   fetch_b_block(base, col0, k0, t, 2u), fetch_b_block(base, col0, k0, t, 3u));
}

fn put_a_all(tid: u32, f: Fetched) {
    if (!a_blocks()) {
        put_a(tid, f.v0);
        put_a(tid + 256u, f.v1);
        return;
    }
    if (tid >= 128u) { return; }
    let g = tid / 4u;
    let kk = (tid % 4u) * 4u;
    a_tile[kk][g] = vec4<f32>(f.v0.x, f.v1.x, f.v2.x, f.v3.x);
    a_tile[kk + 1u][g] = vec4<f32>(f.v0.y, f.v1.y, f.v2.y, f.v3.y);
    a_tile[kk + 2u][g] = vec4<f32>(f.v0.z, f.v1.z, f.v2.z, f.v3.z);
    a_tile[kk + 3u][g] = vec4<f32>(f.v0.w, f.v1.w, f.v2.w, f.v3.w);
}

fn put_b_all(tid: u32, f: Fetched) {
    if (!b_blocks()) {
        put_b(tid, f.v0);
        put_b(tid + 256u, f.v1);
        return;
    }
    if (tid < 128u) { return; }
    let g = (tid - 128u) / 4u;
    let kk = (tid % 4u) * 4u;
    b_tile[kk][g] = vec4<f32>(f.v0.x, f.v1.x, f.v2.x, f.v3.x);
    b_tile[kk + 1u][g] = vec4<f32>(f.v0.y, f.v1.y, f.v2.y, f.v3.y);
    b_tile[kk + 2u][g] = vec4<f32>(f.v0.z, f.v1.z, f.v2.z, f.v3.z);
    b_tile[kk + 3u][g] = vec4<f32>(f.v0.w, f.v1.w, f.v2.w, f.v3.w);
}

// ROW_SUMS: the 8 threads that staged each group of 4 rows (slots tid and tid + 256, at depths
// tid / 32 and 8 + tid / 32 of every slice) have their sums added; 32 threads store them.
fn store_row_sums(c_base: u32, row0: u32, tid: u32) {
    workgroupBarrier();
    if (tid < 32u) {
        var total = vec4<f32>(0.0);
        for (var j = 0u; j < 8u; j++) { total += row_sums[j * 32u + tid]; }
        store_sums(c_base, row0 + tid * 4u, total);
    }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    // Unsplit (SPLIT false, specialised away), all of K from 0: the split's index arithmetic
    // made the unsplit kernel 10 % slower on an H100.
    let batch = select(wid.z, wid.z / p.parts, SPLIT);
    let a_base = a_start(batch);
    let b_base = b_start(batch);
    let k_first = select(0u, (wid.z % p.parts) * p.k_chunk, SPLIT);
    let k_last = select(p.k, min(p.k, k_first + p.k_chunk), SPLIT);
    // Causal attention's products skip what gives zeros or is not needed (CAUSAL): the
    // tile's K range shrinks, to nothing for a tile of C above the diagonal.
    let k_start = select(k_first, max(k_first, row0), CAUSAL == 3u);
    let above = CAUSAL == 1u && col0 >= row0 + 128u;
    let k_end = select(select(k_last, min(k_last, row0 + 128u), CAUSAL == 2u), k_start, above);
    var c00 = vec4<f32>(0.0);
    var c01 = vec4<f32>(0.0);
    var c10 = vec4<f32>(0.0);
    var c11 = vec4<f32>(0.0);
    var c20 = vec4<f32>(0.0);
    var c21 = vec4<f32>(0.0);
    var c30 = vec4<f32>(0.0);
    var c31 = vec4<f32>(0.0);
    var c40 = vec4<f32>(0.0);
    var c41 = vec4<f32>(0.0);
    var c50 = vec4<f32>(0.0);
    var c51 = vec4<f32>(0.0);
    var c60 = vec4<f32>(0.0);
    var c61 = vec4<f32>(0.0);
    var c70 = vec4<f32>(0.0);
    var c71 = vec4<f32>(0.0);

    // Two slots of each tile per thread, or a block for the threads of its half.
    var an: Fetched;
    var bn: Fetched;
    if (PREFETCH) {
        an = fetch_a_all(a_base, row0, k_start, tid);
        bn = fetch_b_all(b_base, col0, k_start, tid);
    }
    let sums_rows = ROW_SUMS && wid.x == 0u;
    if (sums_rows) { row_sums[tid] = vec4<f32>(0.0); }
    for (var k0 = k_start; k0 < k_end; k0 += DEPTH) {
        if (!PREFETCH) {
            an = fetch_a_all(a_base, row0, k0, tid);
            bn = fetch_b_all(b_base, col0, k0, tid);
        }
        put_a_all(tid, an);
        put_b_all(tid, bn);
        if (sums_rows) { row_sums[tid] += an.v0 + an.v1; }
        workgroupBarrier();
        if (PREFETCH && k0 + DEPTH < k_end) {
            an = fetch_a_all(a_base, row0, k0 + DEPTH, tid);
            bn = fetch_b_all(b_base, col0, k0 + DEPTH, tid);
        }
        // The slice's 16 depths written out (src/gpu/pipelines.rs repeats the block), so that
        // the tiles' depth index is a constant and needs no bounds check.
        //#repeat 16
        {
            let a0 = a_tile[#u][lid.y];
            let a1 = a_tile[#u][16u + lid.y];
            let b0 = b_tile[#u][lid.x];
            // Read past the edge when not WIDE (the tile holds zeros there), but not used.
            let b1 = b_tile[#u][16u + lid.x];
            c00 += a0.x * b0;
            if (WIDE) { c01 += a0.x * b1; }
            c10 += a0.y * b0;
            if (WIDE) { c11 += a0.y * b1; }
            c20 += a0.z * b0;
            if (WIDE) { c21 += a0.z * b1; }
            c30 += a0.w * b0;
            if (WIDE) { c31 += a0.w * b1; }
            c40 += a1.x * b0;
            if (WIDE) { c41 += a1.x * b1; }
            c50 += a1.y * b0;
            if (WIDE) { c51 += a1.y * b1; }
            c60 += a1.z * b0;
            if (WIDE) { c61 += a1.z * b1; }
            c70 += a1.w * b0;
            if (WIDE) { c71 += a1.w * b1; }
        }
        //#end
        workgroupBarrier();
    }

    let c_base = c_start(wid.z);
    if (sums_rows) { store_row_sums(c_base, row0, tid); }
    store(c_base, row0 + lid.y * 4u + 0u, col0 + lid.x * 4u, c00);
    store(c_base, row0 + lid.y * 4u + 0u, col0 + 64u + lid.x * 4u, c01);
    store(c_base, row0 + lid.y * 4u + 1u, col0 + lid.x * 4u, c10);
    store(c_base, row0 + lid.y * 4u + 1u, col0 + 64u + lid.x * 4u, c11);
    store(c_base, row0 + lid.y * 4u + 2u, col0 + lid.x * 4u, c20);
    store(c_base, row0 + lid.y * 4u + 2u, col0 + 64u + lid.x * 4u, c21);
    store(c_base, row0 + lid.y * 4u + 3u, col0 + lid.x * 4u, c30);
    store(c_base, row0 + lid.y * 4u + 3u, col0 + 64u + lid.x * 4u, c31);
    store(c_base, row0 + 64u + lid.y * 4u + 0u, col0 + lid.x * 4u, c40);
    store(c_base, row0 + 64u + lid.y * 4u + 0u, col0 + 64u + lid.x * 4u, c41);
    store(c_base, row0 + 64u + lid.y * 4u + 1u, col0 + lid.x * 4u, c50);
    store(c_base, row0 + 64u + lid.y * 4u + 1u, col0 + 64u + lid.x * 4u, c51);
    store(c_base, row0 + 64u + lid.y * 4u + 2u, col0 + lid.x * 4u, c60);
    store(c_base, row0 + 64u + lid.y * 4u + 2u, col0 + 64u + lid.x * 4u, c61);
    store(c_base, row0 + 64u + lid.y * 4u + 3u, col0 + lid.x * 4u, c70);
    store(c_base, row0 + 64u + lid.y * 4u + 3u, col0 + 64u + lid.x * 4u, c71);
}
