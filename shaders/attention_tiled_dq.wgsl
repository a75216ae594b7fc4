// Attention backward for real GPUs, per query row i, in the tiling of attention_tiled.wgsl:
// with p_ij = exp(s_ij - lse_i), dp_ij = dO_i·v_j and delta_i = dO_i·O_i,
// dq_i = scale Σ_j p_ij (dp_ij - delta_i) k_j. Also writes delta for the key-side kernels.
// Same bindings as attention_dq.wgsl, as vec4s; dq is laid out as q is (see in_at).

//#include attention_tiled_common
//#include attention_tiled_keys

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> o: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> dout: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> lse: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> delta: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wid.y / p.heads;
    let h = wid.y % p.heads;
    let i0 = wid.x * ROWS;
    let i = i0 + lid;
    let row = wid.y * p.t + min(i, p.t - 1u);
    let row_at = out_at(b, i, h);
    let q_at = in_at(b, i, h, p.q_off4);
    //#repeat {{D4}}
    let q# = q[q_at + #u] * p.scale;
    let g# = dout[row_at + #u];
    //#end
    var dlt = 0.0;
    //#repeat {{D4}}
    dlt += dot(g#, o[row_at + #u]);
    //#end
    let l = lse[row];
    //#repeat {{D4}}
    var acc# = vec4<f32>(0.0);
    //#end
    let keys = min(i0 + ROWS, p.t);
    for (var j0 = 0u; j0 < keys; j0 += KEYS) {
        stage_keys(b, h, j0, lid);
        for (var jj = 0u; jj < KEYS; jj += 4u) {
            var s = vec4<f32>(0.0);
            var dp = vec4<f32>(0.0);
            //#repeat {{D4}}
            s.x += dot(q#, k_tile[jj * D4 + #u]);
            s.y += dot(q#, k_tile[(jj + 1u) * D4 + #u]);
            s.z += dot(q#, k_tile[(jj + 2u) * D4 + #u]);
            s.w += dot(q#, k_tile[(jj + 3u) * D4 + #u]);
            dp.x += dot(g#, v_tile[jj * D4 + #u]);
            dp.y += dot(g#, v_tile[(jj + 1u) * D4 + #u]);
            dp.z += dot(g#, v_tile[(jj + 2u) * D4 + #u]);
            dp.w += dot(g#, v_tile[(jj + 3u) * D4 + #u]);
            //#end
            let key = vec4<u32>(j0 + jj) + vec4<u32>(0u, 1u, 2u, 3u);
            let ds = select(vec4<f32>(0.0), exp(s - l) * (dp - dlt), key <= vec4<u32>(i));
            //#repeat {{D4}}
            acc# += ds.x * k_tile[jj * D4 + #u] + ds.y * k_tile[(jj + 1u) * D4 + #u] + ds.z * k_tile[(jj + 2u) * D4 + #u] + ds.w * k_tile[(jj + 3u) * D4 + #u];
            //#end
        }
    }
    if (i >= p.t) { return; }
    //#repeat {{D4}}
    dq[q_at + #u] = acc# * p.scale;
    //#end
    delta[row] = dlt;
}
