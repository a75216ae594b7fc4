// Causal attention's backward on the matrix units, query side (attention_coop_common.wgsl):
// for each strip of 16 queries, delta = Σ dO·O over each row (kept for the key side), then over
// the key blocks the scores S = q·kᵀ, P = exp(S − lse) (rounded to f16), dP = dO·vᵀ,
// dS = P ∘ (dP − delta) · scale (rounded to f16), and dq += dS · k.

//#include attention_coop_common
//#include attention_coop_grads

@group(0) @binding(3) var<storage, read> out: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
// The gradients of q, k and v, packed as they are, in f32 or f16 (`Result`: the RESULTS slot).
@group(0) @binding(5) var<storage, read_write> results: array<Result>;
@group(0) @binding(6) var<storage, read_write> delta: array<f32>;

// Σ dO·O over the lane's half of its row, in f32.
fn half_delta(at: u32) -> f32 {
    var sum = vec4<f32>(0.0);
    //#repeat 8 c
    sum += vec4<f32>(g[(at + #cu * 4u) / 4u]) * out[(at + #cu * 4u) / 4u];
    //#end
    return dot(sum, vec4<f32>(1.0));
}

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
    put(1u, fetch_grads(btc_at(b, blk * ROWS, h), tid), tid);
    var keys = fetch_rows(qkv_at(b, 0u, h) + p.k_off, tid);
    var values = fetch_rows(qkv_at(b, 0u, h) + p.v_off, tid);
    let part = half_delta(btc_at(b, query, h) + (lane % 2u) * 32u);
    let row_delta = part + subgroupShuffleXor(part, 1u);
    if (lane % 2u == 0u) {
        delta[bh * p.t + query] = row_delta;
    }
    let row_lse = lse[bh * p.t + query];
    workgroupBarrier();
    let q0 = block_a(0u, sg * STRIP, 0u);
    let q1 = block_a(0u, sg * STRIP, 1u);
    let q2 = block_a(0u, sg * STRIP, 2u);
    let q3 = block_a(0u, sg * STRIP, 3u);
    let y0 = block_a(1u, sg * STRIP, 0u);
    let y1 = block_a(1u, sg * STRIP, 1u);
    let y2 = block_a(1u, sg * STRIP, 2u);
    let y3 = block_a(1u, sg * STRIP, 3u);
    var dq0 = Sum();
    var dq1 = Sum();
    var dq2 = Sum();
    var dq3 = Sum();
    for (var j = 0u; j <= blk; j++) {
        let key0 = j * ROWS;
        workgroupBarrier();
        stage_keys_values(&keys, &values, b, h, key0, j < blk, tid);
        workgroupBarrier();
        products_with_block(q0, q1, q2, q3, 0u, sg);
        workgroupBarrier();
        probs_to_h(sg, lane, key0, query, row_lse);
        workgroupBarrier();
        products_with_block(y0, y1, y2, y3, 1u, sg);
        workgroupBarrier();
        //#repeat 8 g
        {
            let g = #gu;
            let col = lane_col(lane, g);
            let dp = s_get4(sg, row, col);
            probs_to_ds(sg, row, col, dp, vec4<f32>(row_delta));
        }
        //#end
        workgroupBarrier();
        //#repeat 4 kk
        {
            let kk = #kku;
            let ds = h_matrix(sg, kk);
            dq0 = multiply_add(ds, block_b(0u, kk, 0u), dq0);
            dq1 = multiply_add(ds, block_b(0u, kk, 1u), dq1);
            dq2 = multiply_add(ds, block_b(0u, kk, 2u), dq2);
            dq3 = multiply_add(ds, block_b(0u, kk, 3u), dq3);
        }
        //#end
    }
    let at = qkv_at(b, first, h) + p.q_off;
    store_rows(dq0, dq1, dq2, dq3, at, p.stride, sg, lane);
}
