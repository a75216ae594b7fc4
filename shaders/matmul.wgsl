// Batched C = op(A) · op(B), op = transpose when TA / TB, read in place (no transposed copy).
// Each workgroup of 16×16 threads computes a 128×128 tile of C through 16-deep slices of A and
// B staged in workgroup memory as vec4s (4 rows of A, or 4 columns of B, per element). Each
// thread owns 8 rows × 8 columns of C: rows ty*4.. and 64 + ty*4.., columns tx*4.. and
// 64 + tx*4.., in sixteen vec4 registers named, not indexed, so that bounds checks never
// touch the inner loop's registers; its workgroup reads are 4 vec4 loads per 64 FMAs.
// The next slice is fetched into registers while this one is multiplied, so that global
// latency hides behind the math. With VEC4 (each operand's rows a multiple of 4 long) a fetch
// is one vec4 along the operand's rows; otherwise four edge-checked values.

//#include matmul_out

@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;

// Depths per slice: the multiply below is written out this many times (//#repeat 16), so
// change both together.
const DEPTH: u32 = 16u;
override VEC4: bool;

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

// Each thread fetches a quarter of one tile per slice: threads 0..127 four vec4s of A, threads
// 128..255 four of B (warp-uniform, so no divergence).
struct Quad { v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32> }

// Crosswise: the operand's vec4s run along k (A stored [M, K], B stored [N, K]) while its tile
// holds 4 rows (columns) at one depth. Such a unit is 4 rows × 4 depths, transposed in
// registers so that every tile store is a whole vec4 (storing single components with a
// dynamic index ran 1.4-1.7× slower in Chrome than natively).
fn a_crosswise() -> bool { return VEC4 && !TA; }
fn b_crosswise() -> bool { return VEC4 && TB; }

// One vec4 along k of a stored row, 0 past the edges (k is a multiple of 4 with VEC4).
fn a_along_k(base: u32, r: u32, kk: u32) -> vec4<f32> {
    if (r >= p.m || kk >= p.k) { return vec4<f32>(0.0); }
    return a[(base + r * p.k + kk) >> 2u];
}

fn b_along_k(base: u32, cc: u32, kk: u32) -> vec4<f32> {
    if (cc >= p.n || kk >= p.k) { return vec4<f32>(0.0); }
    return b[(base + cc * p.k + kk) >> 2u];
}

// Slot s of the A tile at depth k0, as the tile holds it (not crosswise): with VEC4 one vec4 of
// 4 rows at one depth (A stored [K, M]); else four edge-checked values.
fn a_slot(base: u32, row0: u32, k0: u32, s: u32) -> vec4<f32> {
    let kk = k0 + slot_depth(s, !TA);
    let r = row0 + slot_group(s, !TA) * 4u;
    if (VEC4) {
        if (kk >= p.k || r >= p.m) { return vec4<f32>(0.0); }
        return a[(base + kk * p.m + r) >> 2u];
    }
    return vec4<f32>(load_a(base, r, kk), load_a(base, r + 1u, kk), load_a(base, r + 2u, kk),
                     load_a(base, r + 3u, kk));
}

fn b_slot(base: u32, col0: u32, k0: u32, s: u32) -> vec4<f32> {
    let kk = k0 + slot_depth(s, TB);
    let cc = col0 + slot_group(s, TB) * 4u;
    if (VEC4) {
        if (kk >= p.k || cc >= p.n) { return vec4<f32>(0.0); }
        return b[(base + kk * p.n + cc) >> 2u];
    }
    return vec4<f32>(load_b(base, kk, cc), load_b(base, kk, cc + 1u), load_b(base, kk, cc + 2u),
                     load_b(base, kk, cc + 3u));
}

// Unit u (0..128) of the A tile at depth k0. Crosswise: rows 4g..4g+3 (g = u / 4) at depths
// 4q..4q+3 (q = u % 4), vector j holding row 4g + j. Else slots u, u + 128, u + 256, u + 384.
fn fetch_a(base: u32, row0: u32, k0: u32, u: u32) -> Quad {
    if (a_crosswise()) {
        let r = row0 + (u / 4u) * 4u;
        let kk = k0 + (u % 4u) * 4u;
        return Quad(a_along_k(base, r, kk), a_along_k(base, r + 1u, kk),
                    a_along_k(base, r + 2u, kk), a_along_k(base, r + 3u, kk));
    }
    return Quad(a_slot(base, row0, k0, u), a_slot(base, row0, k0, u + 128u),
                a_slot(base, row0, k0, u + 256u), a_slot(base, row0, k0, u + 384u));
}

fn put_a(u: u32, q: Quad) {
    if (a_crosswise()) {
        let g = u / 4u;
        let kk = (u % 4u) * 4u;
        a_tile[kk][g] = vec4<f32>(q.v0.x, q.v1.x, q.v2.x, q.v3.x);
        a_tile[kk + 1u][g] = vec4<f32>(q.v0.y, q.v1.y, q.v2.y, q.v3.y);
        a_tile[kk + 2u][g] = vec4<f32>(q.v0.z, q.v1.z, q.v2.z, q.v3.z);
        a_tile[kk + 3u][g] = vec4<f32>(q.v0.w, q.v1.w, q.v2.w, q.v3.w);
        return;
    }
    a_tile[slot_depth(u, !TA)][slot_group(u, !TA)] = q.v0;
    a_tile[slot_depth(u + 128u, !TA)][slot_group(u + 128u, !TA)] = q.v1;
    a_tile[slot_depth(u + 256u, !TA)][slot_group(u + 256u, !TA)] = q.v2;
    a_tile[slot_depth(u + 384u, !TA)][slot_group(u + 384u, !TA)] = q.v3;
}

// The same for B, whose tile holds 4 columns at one depth.
fn fetch_b(base: u32, col0: u32, k0: u32, u: u32) -> Quad {
    if (b_crosswise()) {
        let cc = col0 + (u / 4u) * 4u;
        let kk = k0 + (u % 4u) * 4u;
        return Quad(b_along_k(base, cc, kk), b_along_k(base, cc + 1u, kk),
                    b_along_k(base, cc + 2u, kk), b_along_k(base, cc + 3u, kk));
    }
    return Quad(b_slot(base, col0, k0, u), b_slot(base, col0, k0, u + 128u),
                b_slot(base, col0, k0, u + 256u), b_slot(base, col0, k0, u + 384u));
}

fn put_b(u: u32, q: Quad) {
    if (b_crosswise()) {
        let g = u / 4u;
        let kk = (u % 4u) * 4u;
        b_tile[kk][g] = vec4<f32>(q.v0.x, q.v1.x, q.v2.x, q.v3.x);
        b_tile[kk + 1u][g] = vec4<f32>(q.v0.y, q.v1.y, q.v2.y, q.v3.y);
        b_tile[kk + 2u][g] = vec4<f32>(q.v0.z, q.v1.z, q.v2.z, q.v3.z);
        b_tile[kk + 3u][g] = vec4<f32>(q.v0.w, q.v1.w, q.v2.w, q.v3.w);
        return;
    }
    b_tile[slot_depth(u, TB)][slot_group(u, TB)] = q.v0;
    b_tile[slot_depth(u + 128u, TB)][slot_group(u + 128u, TB)] = q.v1;
    b_tile[slot_depth(u + 256u, TB)][slot_group(u + 256u, TB)] = q.v2;
    b_tile[slot_depth(u + 384u, TB)][slot_group(u + 384u, TB)] = q.v3;
}

// This thread's quarter of the tiles at depth k0 (see Quad).
fn fetch(tid: u32, a_base: u32, b_base: u32, origin: vec2<u32>, k0: u32) -> Quad {
    if (tid < 128u) { return fetch_a(a_base, origin.y, k0, tid); }
    return fetch_b(b_base, origin.x, k0, tid - 128u);
}

fn put(tid: u32, q: Quad) {
    if (tid < 128u) { put_a(tid, q); } else { put_b(tid - 128u, q); }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    let a_base = wid.z * p.a_batch_stride;
    let b_base = wid.z * p.b_batch_stride;
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

    let origin = vec2<u32>(col0, row0);
    var next = fetch(tid, a_base, b_base, origin, 0u);
    for (var k0 = 0u; k0 < p.k; k0 += DEPTH) {
        put(tid, next);
        workgroupBarrier();
        if (k0 + DEPTH < p.k) {
            next = fetch(tid, a_base, b_base, origin, k0 + DEPTH);
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
