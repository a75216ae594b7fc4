// The gradients of q, k and v in f16 (attention_coop_common.wgsl, the RESULTS slot), where the
// product that reads them next, the q, k, v layer's, reads f16 (src/ops/attention/packed.rs):
// stored in half the bytes, and no f16 copy made of them for that layer's two gradients'
// products. In either dialect: the accumulators pass through the subgroup's strip of s_tile
// (store_strip), and the lanes round them as the products' f16 stores do
// (matmul_store_f16.wgsl: a value past f16's range an infinity, for the loss scale to see).

alias Result = vec2<u32>;

// A strip's 16 rows of the head's 64 columns, its accumulators r0..r3 (16 columns each), from
// value `at` (a multiple of 4), rows `stride` values apart: 16 lanes a row, 4 halves each, so
// that each store of the subgroup writes two whole rows of 128 bytes.
fn store_rows(r0: Sum, r1: Sum, r2: Sum, r3: Sum, at: u32, stride: u32, sg: u32, lane: u32) {
    // Every subgroup has read its strip (the workgroup's barrier: WGSL has none for a
    // subgroup's memory).
    workgroupBarrier();
    store_strip(r0, sg, 0u);
    store_strip(r1, sg, 1u);
    store_strip(r2, sg, 2u);
    store_strip(r3, sg, 3u);
    workgroupBarrier();
    let col = (lane % 16u) * 4u;
    //#repeat 8 i
    {
        let row = #iu * 2u + lane / 16u;
        let v = s_get4(sg, row, col);
        results[(at + row * stride + col) / 4u] = vec2<u32>(packed_halves(v.xy), packed_halves(v.zw));
    }
    //#end
}

// An infinity at value `at` (a multiple of 4), for the loss scale to see
// (attention_coop_dkv.wgsl): the 3 values after it are made zeros.
fn store_infinity(at: u32) {
    results[at / 4u] = vec2<u32>(0x7c00u, 0u);
}
