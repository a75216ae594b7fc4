// Causal attention, forward, on the matrix units (attention_coop_common.wgsl): for each
// strip of 16 queries, a first walk over the key blocks finds each row's max and sum of
// exponentials (its log-sum-exp, kept for the backward); a second multiplies the
// probabilities, exp(s − lse) rounded to f16, by V. Two walks and three products a block
// rather than one walk that rescales the output as the max grows: a matrix's rows cannot be
// scaled one by one.

//#include attention_coop_common

// The output, [B, T, C], in f32 (the RESULTS slot's f32 include of the dialect).
@group(0) @binding(2) var<storage, read_write> results: array<Result>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) tid: u32,
        @builtin(subgroup_id) sg: u32, @builtin(subgroup_invocation_id) lane: u32) {
    // The dispatch's fast dimension walks the (batch, head)s and its slow one the blocks of
    // rows, the last (which meet the most keys) first: the longest workgroups start first
    // and the shortest fill the GPU's last round.
    let bh = wid.x;
    let blk = p.t / ROWS - 1u - wid.y;
    let b = bh / p.heads;
    let h = bh % p.heads;
    let first = blk * ROWS + sg * STRIP;
    let row = lane_row(lane);
    let query = first + row;
    put(0u, fetch_rows(qkv_at(b, blk * ROWS, h) + p.q_off, tid), tid);
    var keys = fetch_rows(qkv_at(b, 0u, h) + p.k_off, tid);
    workgroupBarrier();
    let q0 = block_a(0u, sg * STRIP, 0u);
    let q1 = block_a(0u, sg * STRIP, 1u);
    let q2 = block_a(0u, sg * STRIP, 2u);
    let q3 = block_a(0u, sg * STRIP, 3u);
    // The lane's half of its row: the running max and sum over the blocks. Each block's
    // staging waits only for the queries' loads: the barriers of the block before keep its
    // products' reads ahead of the staging and the lanes' reads ahead of the products.
    var m = MASKED;
    var l = 0.0;
    workgroupBarrier();
    for (var j = 0u; j <= blk; j++) {
        let key0 = j * ROWS;
        put(0u, keys, tid);
        // The next walk's first block after the last.
        let next = select(j + 1u, 0u, j == blk) * ROWS;
        keys = fetch_rows(qkv_at(b, next, h) + p.k_off, tid);
        workgroupBarrier();
        products_with_block(q0, q1, q2, q3, 0u, sg);
        workgroupBarrier();
        var most = vec4<f32>(MASKED);
        //#repeat 8 g
        {
            let g = #gu;
            let col = lane_col(lane, g);
            let s = s_get4(sg, row, col) * p.scale;
            most = select(most, max(most, s), seen(key0 + col, query));
        }
        //#end
        let block_max = max(max(most.x, most.y), max(most.z, most.w));
        let m_new = max(m, max(block_max, subgroupShuffleXor(block_max, 1u)));
        var sum = vec4<f32>(0.0);
        //#repeat 8 g
        {
            let g = #gu;
            let col = lane_col(lane, g);
            let s = s_get4(sg, row, col) * p.scale;
            sum += select(vec4<f32>(0.0), exp(s - m_new), seen(key0 + col, query));
        }
        //#end
        l = l * exp(m - m_new) + dot(sum, vec4<f32>(1.0));
        m = m_new;
    }
    let row_lse = m + log(l + subgroupShuffleXor(l, 1u));
    if (lane % 2u == 0u) {
        lse[bh * p.t + query] = row_lse;
    }
    var values = fetch_rows(qkv_at(b, 0u, h) + p.v_off, tid);
    var o0 = Sum();
    var o1 = Sum();
    var o2 = Sum();
    var o3 = Sum();
    for (var j = 0u; j <= blk; j++) {
        let key0 = j * ROWS;
        workgroupBarrier();
        stage_keys_values(&keys, &values, b, h, key0, j < blk, tid);
        workgroupBarrier();
        products_with_block(q0, q1, q2, q3, 0u, sg);
        workgroupBarrier();
        probs_to_h(sg, lane, key0, query, row_lse);
        workgroupBarrier();
        //#repeat 4 kk
        {
            let kk = #kku;
            let probs = h_matrix(sg, kk);
            o0 = multiply_add(probs, block_b(1u, kk, 0u), o0);
            o1 = multiply_add(probs, block_b(1u, kk, 1u), o1);
            o2 = multiply_add(probs, block_b(1u, kk, 2u), o2);
            o3 = multiply_add(probs, block_b(1u, kk, 3u), o3);
        }
        //#end
    }
    let at = btc_at(b, first, h);
    store_rows(o0, o1, o2, o3, at, p.c, sg, lane);
}
