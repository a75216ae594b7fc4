// shaders/matmul_coop.wgsl in Chrome's dialect: the same product on the GPU's matrix units, its
// 16 × 16 × 16 matrices Chrome's subgroup matrices (subgroup_matrix_types.wgsl). The staging,
// the tiles' layout and the blocks of C are the same (matmul_f16_tiles); only the matrices'
// types and functions differ, how the tiles are held (below), and where the subgroup's number
// comes from.

//#include subgroup_matrix_types
//#include matmul_f16_tiles

// The staged tiles as untyped workgroup memory (WGSL's buffer_view, Chrome 154 on): Chrome's
// matrix loads take an array of the matrices' own component type, so they read a view of
// halves, while the staging stores 4 halves at once through a view of vec4s, as natively. Held
// as halves and staged 2 bytes a store instead, nanochar's f16 step in the page took 22.71-22.73
// ms pipelined on an H200 against 20.60-20.67 so, matmul_4096 1.91 against 1.63-1.65
// (docs/log/products.md).
var<workgroup> a_tile: buffer<TILE_HALVES * 2u>;
var<workgroup> b_tile: buffer<TILE_HALVES * 2u>;
var<workgroup> c_tile: buffer<C_FLOATS * 4u>;

fn c_get4(i: u32) -> vec4<f32> {
    return bufferView<array<vec4<f32>, C_FLOATS / 4u>>(&c_tile, 0u)[i];
}

fn c_put4(i: u32, v: vec4<f32>) {
    bufferView<array<vec4<f32>, C_FLOATS / 4u>>(&c_tile, 0u)[i] = v;
}

fn stage_a(at: u32, v: vec4<f16>) {
    bufferView<array<vec4<f16>, TILE_HALVES / 4u>>(&a_tile, 0u)[at >> 2u] = v;
}

fn stage_b(at: u32, v: vec4<f16>) {
    bufferView<array<vec4<f16>, TILE_HALVES / 4u>>(&b_tile, 0u)[at >> 2u] = v;
}

// Each subgroup reads its 64 rows of op(A) and 32 columns of op(B) through views of the tiles
// that start there, so that the matrix loads' offsets are constants: Chrome checks each matrix
// load or store whose offset, stride and array length are not all constants against its
// array's end, at run time, and predicates its offset and stride (Tint's robustness), which
// cost the page's products some 30 % (docs/log/products.md, "The fused attention in Chrome's dialect, and Chrome's checks"). A view's
// length is what its subgroup reads: from its first row (or column) to the end of the
// farthest 16 × 16 it loads, so that the view of the last block lies inside the tile.
// op(A) stored [K, M] (TA) lies [depth][row], rows WIDE apart; else [row][depth], NARROW.
const A_DEPTHS: u32 = (DEPTH - 1u) * WIDE + 64u;
const A_ROWS: u32 = 63u * NARROW + DEPTH;
// op(B) stored [N, K] (TB) lies [column][depth], NARROW apart; else [depth][column], WIDE.
const B_DEPTHS: u32 = (DEPTH - 1u) * WIDE + 32u;
const B_COLS: u32 = 31u * NARROW + DEPTH;

// Accumulator `acc`, the subgroup's i-th 16 × 16 of C from its block's `corner`, through
// the subgroup's 16 × 16 of c_tile with its tails loaded a block ahead, as in matmul_coop.wgsl.
fn store_block(acc: Sum, c_base: u32, corner: vec2<u32>, i: u32, sg: u32,
               lane: u32, tails: Tails) -> Tails {
    // The subgroup's 16 × 16 of c_tile as a view of its own (its offset a constant).
    let floats = bufferView<array<f32, 256>>(&c_tile, sg * 1024u);
    subgroupMatrixStore<row_major>(floats, 0u, acc, 16u);
    let ahead = tails_of(c_base, block_corner(corner, min(i + 1u, 7u)), lane);
    workgroupBarrier();
    store_staged(c_base, block_corner(corner, i), sg, lane, tails);
    workgroupBarrier();
    return ahead;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32) {
    // The matrices' offsets must be uniform across the subgroup, which Chrome checks: the
    // subgroup's number is (a number worked out from the invocation's index is not).
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    let a_base = a_start(batch_of(wid.z));
    let b_base = b_start(batch_of(wid.z));
    let k_first = chunk_first(wid.z);
    let k_last = chunk_last(k_first);
    // The subgroup's block: 2 × 4 blocks of 64 rows × 32 columns.
    let br = (sg / 4u) * 64u;
    let bc = (sg % 4u) * 32u;
    let a_depths = bufferView<array<f16, A_DEPTHS>>(&a_tile, br * 2u);
    let a_rows = bufferView<array<f16, A_ROWS>>(&a_tile, br * NARROW * 2u);
    let b_depths = bufferView<array<f16, B_DEPTHS>>(&b_tile, bc * 2u);
    let b_cols = bufferView<array<f16, B_COLS>>(&b_tile, bc * NARROW * 2u);
    var c00 = Sum();
    var c01 = Sum();
    var c10 = Sum();
    var c11 = Sum();
    var c20 = Sum();
    var c21 = Sum();
    var c30 = Sum();
    var c31 = Sum();
    let sums_rows = ROW_SUMS && wid.x == 0u;
    var sums = RowSums(vec4<f32>(0.0), vec4<f32>(0.0));
    var next = fetch_slice(a_base, b_base, row0, col0, k_first, tid);
    // The walk over K counted in slices up to a constant, and left at K's end: Chrome bounds
    // every loop it cannot see to be finite (one counting by 1 to a constant) with a 64-bit
    // count of its own.
    for (var slice = 0u; slice < 0xffffffffu; slice++) {
        let k0 = k_first + slice * DEPTH;
        if (k0 >= k_last) {
            break;
        }
        put_slice(tid, next);
        if (sums_rows) { sums = add_row_sums(sums, next); }
        workgroupBarrier();
        if (k0 + DEPTH < k_last) {
            next = fetch_slice(a_base, b_base, row0, col0, k0 + DEPTH, tid);
        }
        // The slice's 16-deep steps written out, as natively (matmul_coop.wgsl), the loads in
        // the body (constant offsets, which a function's parameters would not be). The
        // transposed operands are read column-major. Chrome checks constant offsets as it
        // compiles, in steps past a shallow slice's too: those read its last step's.
        //#repeat 4 step
        if (#step * 16u < DEPTH) {
            const d = min(#step * 16u, DEPTH - 16u);
            //#repeat 4 i
            var a#i: Left;
            if (TA) {
                a#i = subgroupMatrixLoad<Left, col_major>(a_depths, d * WIDE + #i * 16u, WIDE);
            } else {
                a#i = subgroupMatrixLoad<Left, row_major>(a_rows, #i * 16u * NARROW + d, NARROW);
            }
            //#end
            //#repeat 2 j
            var b#j: Right;
            if (TB) {
                b#j = subgroupMatrixLoad<Right, col_major>(b_cols, #j * 16u * NARROW + d, NARROW);
            } else {
                b#j = subgroupMatrixLoad<Right, row_major>(b_depths, d * WIDE + #j * 16u, WIDE);
            }
            //#end
            c00 = subgroupMatrixMultiplyAccumulate(a0, b0, c00);
            c01 = subgroupMatrixMultiplyAccumulate(a0, b1, c01);
            c10 = subgroupMatrixMultiplyAccumulate(a1, b0, c10);
            c11 = subgroupMatrixMultiplyAccumulate(a1, b1, c11);
            c20 = subgroupMatrixMultiplyAccumulate(a2, b0, c20);
            c21 = subgroupMatrixMultiplyAccumulate(a2, b1, c21);
            c30 = subgroupMatrixMultiplyAccumulate(a3, b0, c30);
            c31 = subgroupMatrixMultiplyAccumulate(a3, b1, c31);
        }
        //#end
        workgroupBarrier();
    }
    let c_base = c_start(wid.z);
    if (sums_rows) { store_row_sums(c_base, row0, tid, sums); }
    let corner = vec2<u32>(row0 + br, col0 + bc);
    var tails = tails_of(c_base, corner, lane);
    tails = store_block(c00, c_base, corner, 0u, sg, lane, tails);
    tails = store_block(c01, c_base, corner, 1u, sg, lane, tails);
    tails = store_block(c10, c_base, corner, 2u, sg, lane, tails);
    tails = store_block(c11, c_base, corner, 3u, sg, lane, tails);
    tails = store_block(c20, c_base, corner, 4u, sg, lane, tails);
    tails = store_block(c21, c_base, corner, 5u, sg, lane, tails);
    tails = store_block(c30, c_base, corner, 6u, sg, lane, tails);
    tails = store_block(c31, c_base, corner, 7u, sg, lane, tails);
}
