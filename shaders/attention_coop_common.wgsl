// What the causal attention kernels on the matrix units share (shaders/attention_coop*.wgsl,
// src/ops/attention/matrix.rs): the FlashAttention tiling with the products on the matrix
// units, in either dialect of WGSL (the UNITS slot: attention_units_coop.wgsl natively,
// attention_units_chrome.wgsl in Chrome, which declare the tiles and the matrices). A
// workgroup takes 64 rows (queries, or keys in the key-side backward) of one (batch,
// head), each of its 4 subgroups of 32 a strip of 16 rows, and walks the 64-row blocks of the
// other side that its rows see. Blocks of q, k, v and dO are staged in workgroup memory as
// f16 by all 128 invocations; the strips' products with them (16 × 64, over the
// head's 64 depths) are matrices, whose f32 results pass through workgroup memory,
// where the lanes apply the mask, the softmax and its gradient and leave the f16 values for
// the next product. The T × T scores never reach memory.
//
// Loops of a constant count are written out (`//#repeat`): naga bounds every loop, and the
// driver then leaves it a loop (docs/log/products.md, "Which check costs").
//
// Every subgroup reads only its own strip of s_tile and h_tile, but WGSL has no barrier for a
// subgroup's memory: the workgroup's is used, every subgroup walking the same blocks.

// q, k and v, packed: rows `stride` values apart, q, k and v starting `*_off` values in, head
// h at h × D after that. The output, dO and lse are [B, T, C] and [B·H, T]; the gradients of
// q, k and v are laid out as they are. q, k, v and dO are f32 or f16 (the INPUTS slot), the rest
// f32, read as vec4s (C is a multiple of 64). The results (the output, or the gradients of q, k
// and v) are stored in f32, or the gradients in f16 (the RESULTS slot: `Result`, `store_rows`).
struct Params {
    t: u32, heads: u32, c: u32, stride: u32, q_off: u32, k_off: u32, v_off: u32, scale: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<Value4>;

// Rows a workgroup takes, rows a subgroup's strip holds, and the head's width.
const ROWS: u32 = 64u;
const STRIP: u32 = 16u;
const D: u32 = 64u;
// A masked score: finite, so that exp(MASKED - m) is 0 and no NaN is made.
const MASKED: f32 = -3.402823e38;

// The dialect's tiles (the UNITS slot): s_tile, each strip's 16 × 64 of f32 results as
// vec4s, rows 68 floats (17 vec4s) apart; h_tile and blocks, the strips' 16 × 64 of f16
// operands and two staged blocks of 64 rows, as vec4s of halves, rows 72 halves (18 vec4s)
// apart. The padding puts successive rows of a matrix load or store in other banks.
const F32_ROW4: u32 = 17u;
const ROW4: u32 = 18u;
const BLOCK4: u32 = ROWS * ROW4;
const S_TILE4: u32 = 4u * STRIP * F32_ROW4;

//#slots UNITS INPUTS RESULTS
//#include {{UNITS}}
//#include {{INPUTS}}
//#include {{RESULTS}}

// Where head h of row `row` of batch b starts: in q, k and v (add the part's offset), and in a
// [B, T, C] tensor.
fn qkv_at(b: u32, row: u32, h: u32) -> u32 {
    return (b * p.t + row) * p.stride + h * D;
}

fn btc_at(b: u32, row: u32, h: u32) -> u32 {
    return (b * p.t + row) * p.c + h * D;
}

// A block of 64 rows as an invocation fetches it: 8 of its 1,024 vec4s, fetched into
// registers a block ahead of their staging, so that their loads are in flight while the block
// before is multiplied. f32 values are rounded to f16 as they are staged (`staged`): no f16
// copy of q, k, v or dO is made (18 copies a step cost nanochar 0.5 ms on an H200).
struct Fetched { v0: Value4, v1: Value4, v2: Value4, v3: Value4,
                 v4: Value4, v5: Value4, v6: Value4, v7: Value4 }

// Vec4 `i` of an invocation's share of the block from `at` (qkv_at and a part's offset):
// vec4 tid + 128 i of the block, row (tid + 128 i) / 16.
fn row_vec(at: u32, tid: u32, i: u32) -> Value4 {
    let v = tid + i * 128u;
    return qkv[(at + (v / 16u) * p.stride) / 4u + v % 16u];
}

fn fetch_rows(at: u32, tid: u32) -> Fetched {
    return Fetched(row_vec(at, tid, 0u), row_vec(at, tid, 1u), row_vec(at, tid, 2u),
                   row_vec(at, tid, 3u), row_vec(at, tid, 4u), row_vec(at, tid, 5u),
                   row_vec(at, tid, 6u), row_vec(at, tid, 7u));
}

// F16_MAX and PAST_F16, f16's largest finite value and the f32 bits from which values round
// past it, with `packed_halves` for the gradients stored in f16 (attention_results_f16.wgsl).
//#include half_packing

// Whether this invocation rounded a value past f16's range (or an infinity or NaN) to f16: a
// conversion of one is undefined in WGSL, so values are held inside the range, and the
// backward's key side reports them (attention_coop_dkv.wgsl) for the loss scale to see. The
// staged blocks of f32 inputs and dS pass through here (f16 inputs report their infinities
// as they are staged); the probabilities lie in [0, 1].
var<private> overflowed: bool;

fn halves(v: vec4<f32>) -> vec4<f16> {
    let size = bitcast<vec4<u32>>(v) & vec4<u32>(0x7fffffffu);
    overflowed = overflowed || any(size >= vec4<u32>(PAST_F16));
    return vec4<f16>(clamp(v, vec4<f32>(-F16_MAX), vec4<f32>(F16_MAX)));
}

// A fetched block staged in slot `slot`.
fn put(slot: u32, f: Fetched, tid: u32) {
    let base = slot * BLOCK4 + (tid / 16u) * ROW4 + tid % 16u;
    // 128 vec4s are 8 rows: share i lies 8 i rows further.
    blocks_put4(base, staged(f.v0));
    blocks_put4(base + 8u * ROW4, staged(f.v1));
    blocks_put4(base + 16u * ROW4, staged(f.v2));
    blocks_put4(base + 24u * ROW4, staged(f.v3));
    blocks_put4(base + 32u * ROW4, staged(f.v4));
    blocks_put4(base + 40u * ROW4, staged(f.v5));
    blocks_put4(base + 48u * ROW4, staged(f.v6));
    blocks_put4(base + 56u * ROW4, staged(f.v7));
}

// The lanes' view of a strip: lane l holds row l / 2 and half l % 2 of the 64 columns, 8
// groups of 4, taken in a rotated order (the second half's lanes start 4 groups on), so that
// each 8 lanes' 16-byte reads fall on 32 banks (rows are 17 vec4s apart).
fn lane_row(lane: u32) -> u32 {
    return lane / 2u;
}

// The first column of the lane's group g, and the 4 values there in s_tile.
fn lane_col(lane: u32, g: u32) -> u32 {
    let half = lane % 2u;
    return half * 32u + ((g + 4u * half) % 8u) * 4u;
}

// The vec4 of s_tile at (row, col..) of subgroup sg's strip (col a multiple of 4).
fn s_at(sg: u32, row: u32, col: u32) -> u32 {
    return (sg * STRIP + row) * F32_ROW4 + col / 4u;
}

fn s_get4(sg: u32, row: u32, col: u32) -> vec4<f32> {
    return s_tile_get4(s_at(sg, row, col));
}

// Which of the 4 keys from `key` a query sees (at or before it).
fn seen(key: u32, query: u32) -> vec4<bool> {
    return vec4<u32>(key) + vec4<u32>(0u, 1u, 2u, 3u) <= vec4<u32>(query);
}

// The vec4 of h_tile at (row, col..) of subgroup sg's strip (col a multiple of 4), and its
// 4 f16 values.
fn h_at(sg: u32, row: u32, col: u32) -> u32 {
    return (sg * STRIP + row) * ROW4 + col / 4u;
}

fn h_get4(sg: u32, row: u32, col: u32) -> vec4<f32> {
    return vec4<f32>(h_tile_get4(h_at(sg, row, col)));
}

fn h_set4(sg: u32, row: u32, col: u32, x: vec4<f32>) {
    h_tile_put4(h_at(sg, row, col), vec4<f16>(x));
}

// The 4 probabilities at (row, col..) in h_tile replaced by their dS, P ∘ (dP − delta) ·
// scale, held inside f16's range (it may leave it where dO carries a large loss scale).
fn probs_to_ds(sg: u32, row: u32, col: u32, dp: vec4<f32>, delta: vec4<f32>) {
    h_tile_put4(h_at(sg, row, col), halves(h_get4(sg, row, col) * (dp - delta) * p.scale));
}

// The probabilities of the lane's row (query `query`, its log-sum-exp `row_lse`) against the
// keys from `key0`, exp(s · scale − lse) from the strip's scores in s_tile, 0 where the key
// comes after the query, into h_tile as the next product's f16 operand.
fn probs_to_h(sg: u32, lane: u32, key0: u32, query: u32, row_lse: f32) {
    let row = lane_row(lane);
    //#repeat 8 g
    {
        let g = #gu;
        let col = lane_col(lane, g);
        let s = s_get4(sg, row, col) * p.scale;
        h_set4(sg, row, col, select(vec4<f32>(0.0), exp(s - row_lse), seen(key0 + col, query)));
    }
    //#end
}

// Key block `key0`'s keys and values (from k's and v's parts) staged in slots 0 and 1, and
// the next block's fetched into them where there is `more`.
fn stage_keys_values(keys: ptr<function, Fetched>, values: ptr<function, Fetched>, b: u32,
                     h: u32, key0: u32, more: bool, tid: u32) {
    put(0u, *keys, tid);
    put(1u, *values, tid);
    if (more) {
        *keys = fetch_rows(qkv_at(b, key0 + ROWS, h) + p.k_off, tid);
        *values = fetch_rows(qkv_at(b, key0 + ROWS, h) + p.v_off, tid);
    }
}

// Columns n × 16.. of a strip of f32 results stored to s_tile (row-major).
fn store_strip(acc: Sum, sg: u32, n: u32) {
    s_tile_store(acc, s_at(sg, 0u, n * 16u));
}

// From a staged block: rows `row`.., depths kk × 16.., as op(A); the same transposed as op(B)
// (the rows as its columns, for products with the rows' transpose); and rows kk × 16.. as op(B),
// columns n × 16.. (for products that sum over the rows: P · V, dS · K, dSᵀ · Q).
fn block_a(slot: u32, row: u32, kk: u32) -> Left {
    return blocks_left(slot * BLOCK4 + row * ROW4 + kk * 4u);
}

fn block_transposed(slot: u32, row: u32, kk: u32) -> Right {
    return blocks_right_transposed(slot * BLOCK4 + row * ROW4 + kk * 4u);
}

fn block_b(slot: u32, kk: u32, n: u32) -> Right {
    return blocks_right(slot * BLOCK4 + kk * 16u * ROW4 + n * 4u);
}

// The strip's f16 values in h_tile, columns kk × 16.., as op(A).
fn h_matrix(sg: u32, kk: u32) -> Left {
    return h_tile_left(sg * STRIP * ROW4 + kk * 4u);
}

// The strip's 16 × 64 products with the 64 rows of block `slot` (scores, or dP): Σ over the
// head's depths of x_kk · rows_kkᵀ, into s_tile.
fn products_with_block(x0: Left, x1: Left, x2: Left, x3: Left, slot: u32, sg: u32) {
    //#repeat 4 n
    {
        let n = #nu;
        var acc = Sum();
        acc = multiply_add(x0, block_transposed(slot, n * 16u, 0u), acc);
        acc = multiply_add(x1, block_transposed(slot, n * 16u, 1u), acc);
        acc = multiply_add(x2, block_transposed(slot, n * 16u, 2u), acc);
        acc = multiply_add(x3, block_transposed(slot, n * 16u, 3u), acc);
        store_strip(acc, sg, n);
    }
    //#end
}
