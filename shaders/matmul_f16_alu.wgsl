enable f16;

// Batched C = op(A) · op(B) in mixed precision on a GPU's ordinary f16 arithmetic, where it
// offers shader-f16 but no matrix units to webgrad (most GPUs in Chrome, which offers its
// subgroup matrices only behind a flag). A and B are read as f16 copies
// (src/ops/matmul/operand_f16.rs) and staged in workgroup memory as the matrix units' kernels
// stage them (matmul_f16_tiles.wgsl); each of the 256 invocations then owns 8 rows × 8 columns
// of the 128 × 128 tile of C, as in the f32 kernel (matmul.wgsl): rows ty*4.. and 64 + ty*4..,
// columns tx*4.. and 64 + tx*4...
//
// Its multiply-adds are f16 vec4s, two packed f16 operations each where the GPU packs them
// (twice its f32 rate where it does), summed in f16 over CHUNK depths and those sums added in
// f32. On an H200 it ran no faster than the f32 tiles however its FMAs were written
// (docs/log/products.md, "f16 on the GPU's arithmetic, without matrix units"), so auto keeps f32
// on GPUs without matrix units and the per-shape timing keeps slower shapes off it. A chunk's
// f16 sum rounds each of its CHUNK additions to f16's 11 bits, about what rounding the operands
// to f16 already costs; every chunk's sum is then added in f32, so the error does not grow
// with K as an f16 sum's would. Values past f16's range (65,504) become infinities, which the
// loss scale catches (src/optim/loss_scale.rs), as it does the operands'.

//#include matmul_f16_tiles

// Depths whose products are summed in f16 before their sum is added in f32: the block below is
// written out this many times (4 × //#repeat 4), so change both together.
const CHUNK: u32 = 16u;

// op(A)'s slice lies as A does (matmul_f16_tiles: [row][depth], NARROW a row, or [depth][row],
// WIDE a depth, with TA); op(B)'s always [depth][column], WIDE a depth: a B stored [N, K] (TB)
// is turned as it is staged, so that 4 columns at a depth are one vec4 load. (Read [column]
// [depth] instead, 16 invocations' loads fall 576 bytes apart, on the same two banks.)
var<workgroup> a_tile: array<vec4<f16>, TILE_HALVES / 4u>;
var<workgroup> b_tile: array<vec4<f16>, TILE_HALVES / 4u>;
// Here only the row sums pass through c_tile (matmul_f16_tiles.wgsl's store_row_sums).
//#include matmul_f16_c_vec4s

// One store of 4 halves.
fn stage_a(at: u32, v: vec4<f16>) {
    a_tile[at >> 2u] = v;
}

// One store of 4 halves, or where TB 4 stores down a column: `at` is then column at / NARROW,
// depths at % NARROW.. (matmul_f16_tiles' put_b).
fn stage_b(at: u32, v: vec4<f16>) {
    if (!TB) {
        b_tile[at >> 2u] = v;
        return;
    }
    let col = at / NARROW;
    let depth = at % NARROW;
    for (var i = 0u; i < 4u; i++) {
        let spot = (depth + i) * WIDE + col;
        b_tile[spot >> 2u][spot & 3u] = v[i];
    }
}

// The 8 rows of op(A) an invocation multiplies, each at depths d..d + 3.
struct Rows { r0: vec4<f16>, r1: vec4<f16>, r2: vec4<f16>, r3: vec4<f16>,
              r4: vec4<f16>, r5: vec4<f16>, r6: vec4<f16>, r7: vec4<f16> }

// Row i of the 8 (rows ty*4.. then 64 + ty*4..) within the tile.
fn row_of(ty: u32, i: u32) -> u32 {
    return (i / 4u) * 64u + ty * 4u + i % 4u;
}

// Rows ty*4.. and 64 + ty*4.. of op(A) at depths d..d + 3 (d a multiple of 4): 8 vec4 loads
// either way, along the depths where A lies [row][depth], along the rows where it lies
// [depth][row] (TA), whose values are then only regrouped.
fn rows_at(d: u32, ty: u32) -> Rows {
    if (TA) {
        let lo0 = a_tile[d * (WIDE / 4u) + ty];
        let lo1 = a_tile[(d + 1u) * (WIDE / 4u) + ty];
        let lo2 = a_tile[(d + 2u) * (WIDE / 4u) + ty];
        let lo3 = a_tile[(d + 3u) * (WIDE / 4u) + ty];
        let hi0 = a_tile[d * (WIDE / 4u) + 16u + ty];
        let hi1 = a_tile[(d + 1u) * (WIDE / 4u) + 16u + ty];
        let hi2 = a_tile[(d + 2u) * (WIDE / 4u) + 16u + ty];
        let hi3 = a_tile[(d + 3u) * (WIDE / 4u) + 16u + ty];
        return Rows(vec4<f16>(lo0.x, lo1.x, lo2.x, lo3.x), vec4<f16>(lo0.y, lo1.y, lo2.y, lo3.y),
                    vec4<f16>(lo0.z, lo1.z, lo2.z, lo3.z), vec4<f16>(lo0.w, lo1.w, lo2.w, lo3.w),
                    vec4<f16>(hi0.x, hi1.x, hi2.x, hi3.x), vec4<f16>(hi0.y, hi1.y, hi2.y, hi3.y),
                    vec4<f16>(hi0.z, hi1.z, hi2.z, hi3.z), vec4<f16>(hi0.w, hi1.w, hi2.w, hi3.w));
    }
    return Rows(a_tile[(row_of(ty, 0u) * NARROW + d) >> 2u],
                a_tile[(row_of(ty, 1u) * NARROW + d) >> 2u],
                a_tile[(row_of(ty, 2u) * NARROW + d) >> 2u],
                a_tile[(row_of(ty, 3u) * NARROW + d) >> 2u],
                a_tile[(row_of(ty, 4u) * NARROW + d) >> 2u],
                a_tile[(row_of(ty, 5u) * NARROW + d) >> 2u],
                a_tile[(row_of(ty, 6u) * NARROW + d) >> 2u],
                a_tile[(row_of(ty, 7u) * NARROW + d) >> 2u]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    let tx = tid % 16u;
    let ty = tid / 16u;
    let a_base = a_start(batch_of(wid.z));
    let b_base = b_start(batch_of(wid.z));
    let k_first = chunk_first(wid.z);
    let k_last = chunk_last(k_first);
    // Named, not an array, so that they stay in registers: c{row}{half} in f32, h{row}{half}
    // the chunk's f16 sums.
    //#repeat 8 R
    var c#R0 = vec4<f32>(0.0);
    var c#R1 = vec4<f32>(0.0);
    var h#R0 = vec4<f16>(0.0);
    var h#R1 = vec4<f16>(0.0);
    //#end
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
        for (var d0 = 0u; d0 < DEPTH; d0 += CHUNK) {
            //#repeat 4 G
            {
                let a = rows_at(d0 + #Gu * 4u, ty);
                //#repeat 4 DD
                {
                    let at = (d0 + #Gu * 4u + #DDu) * (WIDE / 4u) + tx;
                    let b0 = b_tile[at];
                    let b1 = b_tile[at + 16u];
                    //#repeat 8 R
                    h#R0 = fma(vec4<f16>(a.r#R[#DD]), b0, h#R0);
                    h#R1 = fma(vec4<f16>(a.r#R[#DD]), b1, h#R1);
                    //#end
                }
                //#end
            }
            //#end
            //#repeat 8 R
            c#R0 += vec4<f32>(h#R0);
            c#R1 += vec4<f32>(h#R1);
            h#R0 = vec4<f16>(0.0);
            h#R1 = vec4<f16>(0.0);
            //#end
        }
        workgroupBarrier();
    }
    let c_base = c_start(wid.z);
    if (sums_rows) { store_row_sums(c_base, row0, tid, sums); }
    //#repeat 8 R
    store(c_base, row0 + row_of(ty, #Ru), col0 + tx * 4u, c#R0);
    store(c_base, row0 + row_of(ty, #Ru), col0 + 64u + tx * 4u, c#R1);
    //#end
}
