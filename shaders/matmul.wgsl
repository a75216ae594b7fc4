// Batched C = op(A) · op(B), op = transpose when TA / TB, read in place (no transposed copy).
// Each workgroup of 16×16 threads computes a 128×128 tile of C through 16-deep slices of A and
// B staged in workgroup memory as vec4s (4 rows of A, or 4 columns of B, per element). Each
// thread owns 8 rows × 8 columns of C: rows ty*4.. and 64 + ty*4.., columns tx*4.. and
// 64 + tx*4.., in sixteen vec4 registers named, not indexed, so that bounds checks never
// touch the inner loop's registers; its workgroup reads are 4 vec4 loads per 64 FMAs.
// The next slice is fetched into registers while this one is multiplied, so that global
// latency hides behind the math. With VEC4 (each operand's rows a multiple of 4 long) a fetch
// is one vec4 along the operand's rows; otherwise four edge-checked values. With K split
// (src/ops/matmul_split.rs), workgroup_id.z = batch × parts + part and each workgroup
// multiplies its chunk of K into a partial product.

//#include matmul_out

@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;

// Depths per slice: the multiply below is written out this many times (//#repeat 16), so
// change both together.
const DEPTH: u32 = 16u;
override VEC4: bool;
// K split into chunks (p.parts > 1).
override SPLIT: bool;
// What a product of causal attention may skip (src/ops/matmul.rs, `Causal`): 0 nothing, 1 C
// above the diagonal, 2 op(A) right of it (k > row), 3 op(A) left of it (k < row). A constant,
// so that the dense product compiles as before: as a parameter it cost matmul_4096 9 %.
override CAUSAL: u32;

// [k][32 groups of 4 rows] and [k][32 groups of 4 columns]: two indices, so that the bounds
// check on the group is the same at every depth and leaves the inner loop.
var<workgroup> a_tile: array<array<vec4<f32>, 32>, DEPTH>;
var<workgroup> b_tile: array<array<vec4<f32>, 32>, DEPTH>;

// op(A)[row, kk] and op(B)[kk, col] one value at a time, 0 past the edges.
fn load_a(base: u32, row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) { return 0.0; }
    let i = select(base + row * p.k + kk, base + kk * p.m + row, TA);
    return a[i >> 2u][i & 3u];
}

fn load_b(base: u32, kk: u32, col: u32) -> f32 {
    if (col >= p.n || kk >= p.k) { return 0.0; }
    let i = select(base + kk * p.n + col, base + col * p.k + kk, TB);
    return b[i >> 2u][i & 3u];
}

// Slot s (0..512) of a tile: its depth and group of 4 rows (or columns), in the order that
// keeps global reads coalesced when the 4 run along the stored rows.
fn slot_depth(s: u32, along_depth: bool) -> u32 {
    return select(s / 32u, s % DEPTH, along_depth);
}

fn slot_group(s: u32, along_depth: bool) -> u32 {
    return select(s % 32u, s / DEPTH, along_depth);
}

// What a thread fetches for slot s of the A tile at depth k0. With VEC4 and A stored [M, K],
// the vec4 runs along k (4 depths of one row, slot s = row * 4 + quarter); else 4 rows at one
// depth, as the tile holds them.
fn fetch_a(base: u32, row0: u32, k0: u32, s: u32) -> vec4<f32> {
    if (VEC4) {
        if (TA) {
            let kk = k0 + s / 32u;
            let r = row0 + (s % 32u) * 4u;
            if (kk >= p.k || r >= p.m) { return vec4<f32>(0.0); }
            return a[(base + kk * p.m + r) >> 2u];
        }
        let r = row0 + s / 4u;
        let kk = k0 + (s % 4u) * 4u;
        if (r >= p.m || kk >= p.k) { return vec4<f32>(0.0); }
        return a[(base + r * p.k + kk) >> 2u];
    }
    let kk = k0 + slot_depth(s, !TA);
    let r = row0 + slot_group(s, !TA) * 4u;
    return vec4<f32>(load_a(base, r, kk), load_a(base, r + 1u, kk), load_a(base, r + 2u, kk),
                     load_a(base, r + 3u, kk));
}

fn put_a(s: u32, v: vec4<f32>) {
    if (VEC4 && !TA) {
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

// The same for B, whose tile holds 4 columns at one depth; with VEC4 and B stored [N, K] the
// fetched vec4 runs along k.
fn fetch_b(base: u32, col0: u32, k0: u32, s: u32) -> vec4<f32> {
    if (VEC4) {
        if (!TB) {
            let kk = k0 + s / 32u;
            let cc = col0 + (s % 32u) * 4u;
            if (kk >= p.k || cc >= p.n) { return vec4<f32>(0.0); }
            return b[(base + kk * p.n + cc) >> 2u];
        }
        let cc = col0 + s / 4u;
        let kk = k0 + (s % 4u) * 4u;
        if (cc >= p.n || kk >= p.k) { return vec4<f32>(0.0); }
        return b[(base + cc * p.k + kk) >> 2u];
    }
    let kk = k0 + slot_depth(s, TB);
    let cc = col0 + slot_group(s, TB) * 4u;
    return vec4<f32>(load_b(base, kk, cc), load_b(base, kk, cc + 1u), load_b(base, kk, cc + 2u),
                     load_b(base, kk, cc + 3u));
}

fn put_b(s: u32, v: vec4<f32>) {
    if (VEC4 && TB) {
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

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    // Unsplit (SPLIT false, specialised away), all of K from 0: the split's index arithmetic
    // made the unsplit kernel 10 % slower on an H100.
    let batch = select(wid.z, wid.z / p.parts, SPLIT);
    let a_base = batch * p.a_batch_stride;
    let b_base = batch * p.b_batch_stride;
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

    // Two slots of each tile per thread.
    var a0n = fetch_a(a_base, row0, k_start, tid);
    var a1n = fetch_a(a_base, row0, k_start, tid + 256u);
    var b0n = fetch_b(b_base, col0, k_start, tid);
    var b1n = fetch_b(b_base, col0, k_start, tid + 256u);
    for (var k0 = k_start; k0 < k_end; k0 += DEPTH) {
        put_a(tid, a0n);
        put_a(tid + 256u, a1n);
        put_b(tid, b0n);
        put_b(tid + 256u, b1n);
        workgroupBarrier();
        if (k0 + DEPTH < k_end) {
            a0n = fetch_a(a_base, row0, k0 + DEPTH, tid);
            a1n = fetch_a(a_base, row0, k0 + DEPTH, tid + 256u);
            b0n = fetch_b(b_base, col0, k0 + DEPTH, tid);
            b1n = fetch_b(b_base, col0, k0 + DEPTH, tid + 256u);
        }
        // The slice's 16 depths written out (src/ops/matmul.rs repeats the block), so that
        // the tiles' depth index is a constant and needs no bounds check.
        //#repeat 16
        {
            let a0 = a_tile[#u][lid.y];
            let a1 = a_tile[#u][16u + lid.y];
            let b0 = b_tile[#u][lid.x];
            let b1 = b_tile[#u][16u + lid.x];
            c00 += a0.x * b0;
            c01 += a0.x * b1;
            c10 += a0.y * b0;
            c11 += a0.y * b1;
            c20 += a0.z * b0;
            c21 += a0.z * b1;
            c30 += a0.w * b0;
            c31 += a0.w * b1;
            c40 += a1.x * b0;
            c41 += a1.x * b1;
            c50 += a1.y * b0;
            c51 += a1.y * b1;
            c60 += a1.z * b0;
            c61 += a1.z * b1;
            c70 += a1.w * b0;
            c71 += a1.w * b1;
        }
        //#end
        workgroupBarrier();
    }

    let c_base = wid.z * p.m * p.n;
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
