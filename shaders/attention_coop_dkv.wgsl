// Causal attention's backward on the matrix units, key side (attention_coop_common.wgsl):
// for each strip of 16 keys, over the query blocks that see them, Sᵀ = k·qᵀ and
// Pᵀ = exp(Sᵀ − lse) (rounded to f16) for dv += Pᵀ · dO, then dPᵀ = v·dOᵀ and
// dSᵀ = Pᵀ ∘ (dPᵀ − delta) · scale (rounded to f16) for dk += dSᵀ · q. delta is the query
// side's (attention_coop_dq.wgsl). The workgroups together stage every row of q, k, v and
// dO and round every dS: where one held a value past f16's range, it makes q's gradient
// infinite there (the query side, dispatched before, is done with it), so that the loss scale
// skips the step.

//#include attention_coop_common
//#include attention_coop_grads

@group(0) @binding(3) var<storage, read> lse: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> delta: array<vec4<f32>>;
// The gradients of q, k and v, packed as they are, in f32 or f16 (`Result`: the RESULTS slot).
@group(0) @binding(5) var<storage, read_write> results: array<Result>;

// The staged query block's lse (16 vec4s) and delta (16 more), which every strip reads.
var<workgroup> stats: array<vec4<f32>, 32>;

// The first 32 invocations stage the statistics of the 64 queries from `at` (wid.y × T and
// the block's first).
fn put_stats(at: u32, tid: u32) {
    if (tid < 16u) {
        stats[tid] = lse[at / 4u + tid];
    } else if (tid < 32u) {
        stats[tid] = delta[at / 4u + tid - 16u];
    }
}

// Which of the 4 queries from `query` see the key (come at or after it).
fn seeing(query: u32, key: u32) -> vec4<bool> {
    return vec4<u32>(query) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(key);
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32) {
    // The dispatch's fast dimension walks the (batch, head)s and its slow one the blocks of
    // keys, the first (which meet the most queries) first: the longest workgroups start
    // first and the shortest fill the GPU's last round.
    let bh = wid.x;
    let blk = wid.y;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let first = blk * ROWS + sg * STRIP;
    let row = lane_row(lane);
    let key = first + row;
    put(0u, fetch_rows(qkv_at(b, blk * ROWS, h) + p.k_off, tid), tid);
    put(1u, fetch_rows(qkv_at(b, blk * ROWS, h) + p.v_off, tid), tid);
    var queries = fetch_rows(qkv_at(b, blk * ROWS, h) + p.q_off, tid);
    var grads = fetch_grads(btc_at(b, blk * ROWS, h), tid);
    workgroupBarrier();
    let k0 = block_a(0u, sg * STRIP, 0u);
    let k1 = block_a(0u, sg * STRIP, 1u);
    let k2 = block_a(0u, sg * STRIP, 2u);
    let k3 = block_a(0u, sg * STRIP, 3u);
    let v0 = block_a(1u, sg * STRIP, 0u);
    let v1 = block_a(1u, sg * STRIP, 1u);
    let v2 = block_a(1u, sg * STRIP, 2u);
    let v3 = block_a(1u, sg * STRIP, 3u);
    var dk0 = Sum();
    var dk1 = Sum();
    var dk2 = Sum();
    var dk3 = Sum();
    var dv0 = Sum();
    var dv1 = Sum();
    var dv2 = Sum();
    var dv3 = Sum();
    let blocks_of_t = p.t / ROWS;
    for (var i = blk; i < blocks_of_t; i++) {
        let query0 = i * ROWS;
        workgroupBarrier();
        put(0u, queries, tid);
        put(1u, grads, tid);
        put_stats(bh * p.t + query0, tid);
        if (i + 1u < blocks_of_t) {
            queries = fetch_rows(qkv_at(b, query0 + ROWS, h) + p.q_off, tid);
            grads = fetch_grads(btc_at(b, query0 + ROWS, h), tid);
        }
        workgroupBarrier();
        products_with_block(k0, k1, k2, k3, 0u, sg);
        workgroupBarrier();
        //#repeat 8 g
        {
            let g = #gu;
            let col = lane_col(lane, g);
            let s = s_get4(sg, row, col) * p.scale;
            let pt = select(vec4<f32>(0.0), exp(s - stats[col / 4u]), seeing(query0 + col, key));
            h_set4(sg, row, col, pt);
        }
        //#end
        workgroupBarrier();
        //#repeat 4 kk
        {
            let kk = #kku;
            let pt = h_matrix(sg, kk);
            dv0 = multiply_add(pt, block_b(1u, kk, 0u), dv0);
            dv1 = multiply_add(pt, block_b(1u, kk, 1u), dv1);
            dv2 = multiply_add(pt, block_b(1u, kk, 2u), dv2);
            dv3 = multiply_add(pt, block_b(1u, kk, 3u), dv3);
        }
        //#end
        products_with_block(v0, v1, v2, v3, 1u, sg);
        workgroupBarrier();
        //#repeat 8 g
        {
            let g = #gu;
            let col = lane_col(lane, g);
            let dp = s_get4(sg, row, col);
            let d = stats[16u + col / 4u];
            probs_to_ds(sg, row, col, dp, d);
        }
        //#end
        workgroupBarrier();
        //#repeat 4 kk
        {
            let kk = #kku;
            let dst = h_matrix(sg, kk);
            dk0 = multiply_add(dst, block_b(0u, kk, 0u), dk0);
            dk1 = multiply_add(dst, block_b(0u, kk, 1u), dk1);
            dk2 = multiply_add(dst, block_b(0u, kk, 2u), dk2);
            dk3 = multiply_add(dst, block_b(0u, kk, 3u), dk3);
        }
        //#end
    }
    if (overflowed) {
        store_infinity(qkv_at(b, blk * ROWS, h) + p.q_off);
    }
    let ks = qkv_at(b, first, h) + p.k_off;
    let vs = qkv_at(b, first, h) + p.v_off;
    store_rows(dk0, dk1, dk2, dk3, ks, p.stride, sg, lane);
    store_rows(dv0, dv1, dv2, dv3, vs, p.stride, sg, lane);
}
