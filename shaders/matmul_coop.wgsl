enable f16;
enable wgpu_cooperative_matrix;

// Batched C = op(A) · op(B) on the GPU's matrix units (mixed precision): A and B are read as
// f16 copies (src/ops/matmul/operand_f16.rs), staged in workgroup memory, and multiplied
// 16 × 16 × 16 at a time by cooperative matrices that add in f32. Each workgroup of 256
// invocations computes a 128 × 128 tile of C through slices of K (with SPLIT, a partial product
// over its chunk of K: matmul_f16_tiles.wgsl); its 8 subgroups of 32 (a run gets this kernel
// only where the adapter's subgroups are always 32 wide: src/gpu/precision.rs) each own 64 rows
// × 32 columns of it, 4 × 2 accumulators. C leaves through workgroup memory, one
// accumulator at a time, so that the shared store (matmul_out: bias, residual, GELU's or
// ReLU's derivative) sees vec4s of C as in the f32 kernels.
//
// Values past f16's range (65,504) become infinities, and values below 6e-8 zeros: mixed
// precision's cost, which the f32 sums and the f32 tensors around the product keep to the
// operands' rounding.

//#include matmul_f16_tiles

// The staged tiles as vec4s of f16, so that 4 halves are stored at once: one 8-byte store
// instead of 4 of 2 bytes (matmul_4096 1.91 ms against 2.18, nanochar's step 22.8 against 24.5
// on an H200: docs/log/products.md). The matrix loads take a pointer to a vec4 and a stride in
// vec4s, and read the halves as they lie.
var<workgroup> a_tile: array<vec4<f16>, TILE_HALVES / 4u>;
var<workgroup> b_tile: array<vec4<f16>, TILE_HALVES / 4u>;
//#include matmul_f16_c_vec4s

fn stage_a(at: u32, v: vec4<f16>) {
    a_tile[at >> 2u] = v;
}

fn stage_b(at: u32, v: vec4<f16>) {
    b_tile[at >> 2u] = v;
}

// op(A)'s 16 × 16 from [row, depth] and op(B)'s from [depth, col], read from the tiles as
// they lie (matmul_f16_tiles).
fn load_a_matrix(row: u32, depth: u32) -> coop_mat16x16<f16, A> {
    if (TA) {
        return coopLoad<coop_mat16x16<f16, A>>(&a_tile[(depth * WIDE + row) >> 2u], WIDE / 4u);
    }
    return coopLoadT<coop_mat16x16<f16, A>>(&a_tile[(row * NARROW + depth) >> 2u], NARROW / 4u);
}

fn load_b_matrix(depth: u32, col: u32) -> coop_mat16x16<f16, B> {
    if (TB) {
        return coopLoad<coop_mat16x16<f16, B>>(&b_tile[(col * NARROW + depth) >> 2u], NARROW / 4u);
    }
    return coopLoadT<coop_mat16x16<f16, B>>(&b_tile[(depth * WIDE + col) >> 2u], WIDE / 4u);
}

// Accumulator `acc`, the subgroup's i-th 16 × 16 of C from its block's `corner`
// (block_corner), through the subgroup's 16 × 16 of c_tile (store_staged: whole sectors of C
// a store), with `tails`, its epilogue's reads, loaded a block ahead: the next block's are
// loaded here and handed back. Each subgroup has its own 16 × 16, but
// WGSL has no barrier for a subgroup's memory: the workgroup's is used, every subgroup
// storing its accumulators in the same order. Stored straight from the accumulators into C's
// buffer instead (coopStoreT to storage, where nothing is added to C), nanochar's f16 step
// took 19.3 ms on an H200 against 18.7 so (docs/log/products.md).
fn store_block(acc: coop_mat16x16<f32, C>, c_base: u32, corner: vec2<u32>, i: u32, sg: u32,
               lane: u32, tails: Tails) -> Tails {
    coopStoreT(acc, &c_tile[sg * 64u], 4u);
    let ahead = tails_of(c_base, block_corner(corner, min(i + 1u, 7u)), lane);
    workgroupBarrier();
    store_staged(c_base, block_corner(corner, i), sg, lane, tails);
    workgroupBarrier();
    return ahead;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32) {
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    let a_base = a_start(batch_of(wid.z));
    let b_base = b_start(batch_of(wid.z));
    let k_first = chunk_first(wid.z);
    let k_last = chunk_last(k_first);
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
    var sums = RowSums(vec4<f32>(0.0), vec4<f32>(0.0));
    var next = fetch_slice(a_base, b_base, row0, col0, k_first, tid);
    for (var k0 = k_first; k0 < k_last; k0 += DEPTH) {
        put_slice(tid, next);
        if (sums_rows) { sums = add_row_sums(sums, next); }
        workgroupBarrier();
        if (k0 + DEPTH < k_last) {
            next = fetch_slice(a_base, b_base, row0, col0, k0 + DEPTH, tid);
        }
        // The slice's 16-deep steps (DEPTH is 32 or 64) written out, not a loop: naga bounds
        // every loop, and the driver then leaves it a loop (docs/log/products.md, "Which check
        // costs").
        //#repeat 4 step
        if (#step * 16u < DEPTH) {
            let d = #step * 16u;
            let a0 = load_a_matrix(br, d);
            let a1 = load_a_matrix(br + 16u, d);
            let a2 = load_a_matrix(br + 32u, d);
            let a3 = load_a_matrix(br + 48u, d);
            let b0 = load_b_matrix(d, bc);
            let b1 = load_b_matrix(d, bc + 16u);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c20 = coopMultiplyAdd(a2, b0, c20);
            c21 = coopMultiplyAdd(a2, b1, c21);
            c30 = coopMultiplyAdd(a3, b0, c30);
            c31 = coopMultiplyAdd(a3, b1, c31);
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
