// Causal multi-head self-attention, forward, for real GPUs (the FlashAttention scheme): a
// workgroup takes 64 query rows of one (batch, head), a thread per row, and walks the blocks of
// keys up to its diagonal. Each block's keys and values are staged in workgroup memory by
// coalesced vec4 loads and read back as broadcasts (all threads read the same key). A thread
// keeps its query, its output and a running max and sum in registers, so the T×T scores never
// reach memory. Same bindings as attention.wgsl, as vec4s: the head width is a multiple of 4.
// Parameters as attention_tiled_common.wgsl says.

//#include attention_tiled_common
//#include attention_tiled_keys

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

const MASKED: f32 = -3.402823e38;

// The four sums of four vectors' components: products are summed per component first, so that
// a score is four short chains of additions rather than one long one.
fn sums(x: vec4<f32>, y: vec4<f32>, z: vec4<f32>, w: vec4<f32>) -> vec4<f32> {
    let one = vec4<f32>(1.0);
    return vec4<f32>(dot(x, one), dot(y, one), dot(z, one), dot(w, one));
}

// Each thread's scores for the block, 4 keys per vec4: [KEYS / 4][ROWS].
var<workgroup> scores: array<vec4<f32>, KEYS / 4u * ROWS>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wid.y / p.heads;
    let h = wid.y % p.heads;
    let i0 = wid.x * ROWS;
    let i = i0 + lid;
    let q_at = in_at(b, i, h, p.q_off4);
    //#repeat {{D4}}
    let q# = q[q_at + #u] * p.scale;
    var o# = vec4<f32>(0.0);
    //#end
    var m = MASKED;
    var l = 0.0;
    let keys = min(i0 + ROWS, p.t);
    for (var j0 = 0u; j0 < keys; j0 += KEYS) {
        stage_keys(b, h, j0, lid);
        // Scores of this block, masked above the diagonal, and their max.
        var block_max = m;
        for (var g = 0u; g < KEYS / 4u; g++) {
            let jj = g * 4u;
            var s_x = vec4<f32>(0.0);
            var s_y = vec4<f32>(0.0);
            var s_z = vec4<f32>(0.0);
            var s_w = vec4<f32>(0.0);
            //#repeat {{D4}}
            s_x += q# * k_tile[jj * D4 + #u];
            s_y += q# * k_tile[(jj + 1u) * D4 + #u];
            s_z += q# * k_tile[(jj + 2u) * D4 + #u];
            s_w += q# * k_tile[(jj + 3u) * D4 + #u];
            //#end
            var s = sums(s_x, s_y, s_z, s_w);
            let key = vec4<u32>(j0 + jj) + vec4<u32>(0u, 1u, 2u, 3u);
            s = select(vec4<f32>(MASKED), s, key <= vec4<u32>(i));
            scores[g * ROWS + lid] = s;
            block_max = max(block_max, max(max(s.x, s.y), max(s.z, s.w)));
        }
        // Rescale what came before to the new max once per block, then add this block.
        let factor = exp(m - block_max);
        m = block_max;
        l *= factor;
        //#repeat {{D4}}
        o# *= factor;
        //#end
        for (var g = 0u; g < KEYS / 4u; g++) {
            let jj = g * 4u;
            let e = exp(scores[g * ROWS + lid] - m);
            l += e.x + e.y + e.z + e.w;
            //#repeat {{D4}}
            o# += e.x * v_tile[jj * D4 + #u] + e.y * v_tile[(jj + 1u) * D4 + #u] + e.z * v_tile[(jj + 2u) * D4 + #u] + e.w * v_tile[(jj + 3u) * D4 + #u];
            //#end
        }
    }
    if (i >= p.t) { return; }
    let row_at = out_at(b, i, h);
    //#repeat {{D4}}
    out[row_at + #u] = o# / l;
    //#end
    lse[wid.y * p.t + i] = m + log(l);
}
