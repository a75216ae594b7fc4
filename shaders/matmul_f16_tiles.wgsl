// The staging of the matrix units' product kernels (shaders/matmul_coop.wgsl natively,
// shaders/matmul_subgroup_matrix.wgsl in Chrome), which differ only in how their dialect names
// the matrices and holds the staged tiles: 128 × 128 tiles of C through slices DEPTH deep, A
// and B read as f16 copies whose stored rows are padded with zeros to a multiple of 8 halves
// (src/ops/matmul/operand_f16.rs), a packet of PACKET halves a load, the next slice fetched
// into registers while this one is multiplied, and the bias gradient's row sums in f32. How
// deep a slice is and how wide a packet, SLICES says (matmul_f16_deep.wgsl,
// matmul_f16_shallow.wgsl, by the device's workgroup memory: src/ops/matmul/plan.rs). Each
// dialect declares `a_tile` and `b_tile` (TILE_HALVES halves each) and `stage_a`/`stage_b`, which
// store 4 halves at a tile's half `at` (a multiple of 4); and `c_tile` (C_FLOATS), one 16 × 16 f32
// accumulator of each subgroup on its way out, or the row sums, with `c_get4`/`c_put4`, which read
// and write its vec4 `i`: 4 floats an access, so that one index clamp serves 4 (wgpu clamps every
// index into workgroup memory natively; docs/log/products.md, "c_tile as vec4s").
//#slots SLICES

//#include matmul_out

//#include matmul_f16_{{SLICES}}

// With A transposed (a weight gradient, A the output's gradient), the workgroups of the first
// column of tiles also sum op(A)'s rows in f32, the bias's gradient, and store the sums after
// C's matrix (src/ops/matmul/bias_grad.rs), as matmul.wgsl does.
override ROW_SUMS: bool;

// K cut into chunks (p.parts of p.k_chunk, a multiple of DEPTH so that no slice reaches into
// the next chunk): workgroup_id.z = batch × parts + part, and each workgroup multiplies its
// chunk of K into a partial product, C's matrix z (summed after: src/ops/matmul/split_sum.rs).
override SPLIT: bool;

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
// The staged slices lie as their operands do in memory, so that a fetched packet is stored as
// neighbouring halves, never scattered down a column: op(A)'s slice [row][depth], or
// [depth][row] where A is stored [K, M] (TA); op(B)'s [depth][column], or [column][depth]
// where B is stored [N, K] (TB). The matrix loads read the second kind column-major. A row of
// a slice is 8 halves (16 bytes) longer than its data, so that the matrix loads of successive
// rows start in different banks. Staged transposed instead (each vec4 scattered down a column
// of the tile), nanochar's f16 step took 27.4 ms natively on an H200 against 24.5
// (docs/log/products.md).
const NARROW: u32 = DEPTH + 8u;
const WIDE: u32 = 128u + 8u;
// The larger of the two layouts: 128 rows of NARROW.
const TILE_HALVES: u32 = 128u * NARROW;
const C_FLOATS: u32 = 2048u;

// Subgroup sg's 16 × 16 of C, staged row-major in c_tile, stored from `corner` (its first row
// and column) with `tails`, what the epilogue reads beside C (tails_of): lane l stores 4
// columns of rows l / 4 and 8 + l / 4, so that each of the subgroup's two stores writes 8 rows
// of 64 bytes, whole 32-byte sectors. With each lane storing two vec4s 16 bytes apart (half of
// each sector a store), nanochar's f16 step took 19.5 ms on an H200 against 18.7
// (docs/log/products.md): its products are shallow (K of 384 forward), so C's stores weigh.
fn store_staged(c_base: u32, corner: vec2<u32>, sg: u32, lane: u32, tails: Tails) {
    let row = lane / 4u;
    let col = (lane % 4u) * 4u;
    let at = (sg * 256u + row * 16u + col) / 4u;
    let upper = c_get4(at);
    let lower = c_get4(at + 32u);
    store_with(c_base, corner.x + row, corner.y + col, upper, tails.upper);
    store_with(c_base, corner.x + row + 8u, corner.y + col, lower, tails.lower);
}

// What the epilogue reads beside C for a lane's two stores of a 16 × 16 (store_staged).
struct Tails {
    upper: vec4<f32>,
    lower: vec4<f32>,
}

// The tails of the lane's stores of the 16 × 16 from `corner` (row, column), loaded a block
// ahead of its stores (store_block), so that their wait passes with the block before's: on an
// H200 nanochar's input gradients through GELU took 1.85 ms a step, 1.17 without the reads
// and 1.49 with them loaded so (docs/log/products.md).
fn tails_of(c_base: u32, corner: vec2<u32>, lane: u32) -> Tails {
    let row = corner.x + lane / 4u;
    let col = corner.y + (lane % 4u) * 4u;
    return Tails(tail_at(c_base, row, col), tail_at(c_base, row + 8u, col));
}

// The corner of a subgroup's i-th 16 × 16 of C from its block's `corner`, in the order the
// kernels store them: two across, four down.
fn block_corner(corner: vec2<u32>, i: u32) -> vec2<u32> {
    return corner + vec2<u32>(16u * (i / 2u), 16u * (i % 2u));
}

// A slice of one operand is 128 × DEPTH halves, SLOTS packets: ACROSS of them across a row of
// the tile's 128 rows (or columns), ALONG along DEPTH. Each of the 256 invocations fetches 4
// of each operand: both kinds of slices hold 1,024 packets.
const SLOTS: u32 = 128u * DEPTH / PACKET;
const ACROSS: u32 = 128u / PACKET;
const ALONG: u32 = DEPTH / PACKET;

// What slot s of the A slice holds: PACKET values of op(A). With A stored [K, M], op(A)'s rows
// PACKET × (s % ACROSS).. at depth s / ACROSS; else row s / ALONG at depths PACKET × (s %
// ALONG)... A packet that starts inside K lies inside the padded row (PACKET divides 8).
fn fetch_a(base: u32, row0: u32, k0: u32, s: u32) -> Packet {
    if (TA) {
        let kk = k0 + s / ACROSS;
        let row = row0 + (s % ACROSS) * PACKET;
        return a_packet((base + kk * p.a_row_stride + row) / PACKET, (kk < p.k) & (row < p.m));
    }
    let row = row0 + s / ALONG;
    let kk = k0 + (s % ALONG) * PACKET;
    return a_packet((base + row * p.a_row_stride + kk) / PACKET, (kk < p.k) & (row < p.m));
}

// Slot s's values in the A tile, where they lie in memory.
fn put_a(s: u32, v: Packet) {
    let at = select((s / ALONG) * NARROW + (s % ALONG) * PACKET,
                    (s / ACROSS) * WIDE + (s % ACROSS) * PACKET, TA);
    stage_packet(at, v, true);
}

// The same for B: with B stored [N, K], column s / ALONG at depths PACKET × (s % ALONG)..;
// else columns PACKET × (s % ACROSS).. at depth s / ACROSS.
fn fetch_b(base: u32, col0: u32, k0: u32, s: u32) -> Packet {
    if (TB) {
        let col = col0 + s / ALONG;
        let kk = k0 + (s % ALONG) * PACKET;
        return b_packet((base + col * p.b_row_stride + kk) / PACKET, (kk < p.k) & (col < p.n));
    }
    let kk = k0 + s / ACROSS;
    let col = col0 + (s % ACROSS) * PACKET;
    return b_packet((base + kk * p.b_row_stride + col) / PACKET, (kk < p.k) & (col < p.n));
}

fn put_b(s: u32, v: Packet) {
    let at = select((s / ACROSS) * WIDE + (s % ACROSS) * PACKET,
                    (s / ALONG) * NARROW + (s % ALONG) * PACKET, TB);
    stage_packet(at, v, false);
}

// An invocation's share of a slice, slots tid + 256 × i of each tile: fetched into registers
// all at once (their loads in flight together), the next slice's while this one is multiplied.
struct Slice { a0: Packet, a1: Packet, a2: Packet, a3: Packet,
               b0: Packet, b1: Packet, b2: Packet, b3: Packet }

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

// ROW_SUMS (A transposed): an invocation's 4 packets of A hold the same rows, group
// tid % ACROSS of PACKET rows, at 4 depths; it sums them as 8 rows (the last 4 zero when a
// packet holds 4 halves).
struct RowSums { low: vec4<f32>, high: vec4<f32> }

fn add_row_sums(sums: RowSums, f: Slice) -> RowSums {
    let low = low_halves(f.a0) + low_halves(f.a1) + low_halves(f.a2) + low_halves(f.a3);
    let high = high_halves(f.a0) + high_halves(f.a1) + high_halves(f.a2) + high_halves(f.a3);
    return RowSums(sums.low + low, sums.high + high);
}

// The sums of each group's invocations are added through c_tile (256 × 8 floats) and the
// first ACROSS invocations store them, a group each.
fn store_row_sums(c_base: u32, row0: u32, tid: u32, sums: RowSums) {
    c_put4(tid * 2u, sums.low);
    c_put4(tid * 2u + 1u, sums.high);
    workgroupBarrier();
    if (tid < ACROSS) {
        var low = vec4<f32>(0.0);
        var high = vec4<f32>(0.0);
        // 256 / ACROSS groups: 8 or 16, as PACKET is 4 or 8.
        //#repeat 16 j
        if (#ju < 256u / ACROSS) {
            let at = (#ju * ACROSS + tid) * 2u;
            low += c_get4(at);
            high += c_get4(at + 1u);
        }
        //#end
        store_sums(c_base, row0 + tid * PACKET, low);
        if (PACKET == 8u) { store_sums(c_base, row0 + tid * PACKET + 4u, high); }
    }
    workgroupBarrier();
}
