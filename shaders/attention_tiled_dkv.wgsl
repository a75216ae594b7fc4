// Attention backward for real GPUs, per key row j: over the queries i >= j that see it,
// dk_j = scale Σ_i p_ij (dp_ij - delta_i) q_i when GRAD_K, else dv_j = Σ_i p_ij dO_i (see
// attention_tiled_dq.wgsl). A workgroup takes 64 key rows of one (batch, head), a thread per
// row, and walks the blocks of queries from its diagonal to the end, staged in workgroup
// memory like the keys of the forward kernel. The two gradients are two dispatches so that a
// thread holds at most three vectors of the head's width in registers.

//#include attention_tiled_common

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> dout: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;
@group(0) @binding(7) var<storage, read_write> grad: array<vec4<f32>>;

const QUERIES: u32 = BLOCK;
override GRAD_K: bool;

var<workgroup> q_tile: array<vec4<f32>, QUERIES * D4>;
var<workgroup> g_tile: array<vec4<f32>, QUERIES * D4>;
var<workgroup> lse_tile: array<vec4<f32>, QUERIES / 4u>;
var<workgroup> delta_tile: array<vec4<f32>, QUERIES / 4u>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let b = wid.y / p.heads;
    let h = wid.y % p.heads;
    let j0 = wid.x * ROWS;
    let j = j0 + lid;
    let k_at = in_at(b, j, h, p.k_off4);
    let v_at = in_at(b, j, h, p.v_off4);
    //#repeat {{D4}}
    let k# = k[k_at + #u] * p.scale;
    let v# = v[v_at + #u];
    var acc# = vec4<f32>(0.0);
    //#end
    for (var i0 = j0; i0 < p.t; i0 += QUERIES) {
        workgroupBarrier();
        for (var s = lid; s < QUERIES * D4; s += ROWS) {
            let i = i0 + s / D4;
            q_tile[s] = q[in_at(b, i, h, p.q_off4) + s % D4];
            g_tile[s] = dout[out_at(b, i, h) + s % D4];
        }
        if (lid < QUERIES) {
            let r = wid.y * p.t + min(i0 + lid, p.t - 1u);
            lse_tile[lid / 4u][lid % 4u] = lse[r];
            delta_tile[lid / 4u][lid % 4u] = delta[r];
        }
        workgroupBarrier();
        for (var ii = 0u; ii < QUERIES; ii += 4u) {
            var s = vec4<f32>(0.0);
            //#repeat {{D4}}
            s.x += dot(k#, q_tile[ii * D4 + #u]);
            s.y += dot(k#, q_tile[(ii + 1u) * D4 + #u]);
            s.z += dot(k#, q_tile[(ii + 2u) * D4 + #u]);
            s.w += dot(k#, q_tile[(ii + 3u) * D4 + #u]);
            //#end
            let query = vec4<u32>(i0 + ii) + vec4<u32>(0u, 1u, 2u, 3u);
            let seen = (query >= vec4<u32>(j)) & (query < vec4<u32>(p.t));
            let pr = select(vec4<f32>(0.0), exp(s - lse_tile[ii / 4u]), seen);
            if (GRAD_K) {
                var dp = vec4<f32>(0.0);
                //#repeat {{D4}}
                dp.x += dot(v#, g_tile[ii * D4 + #u]);
                dp.y += dot(v#, g_tile[(ii + 1u) * D4 + #u]);
                dp.z += dot(v#, g_tile[(ii + 2u) * D4 + #u]);
                dp.w += dot(v#, g_tile[(ii + 3u) * D4 + #u]);
                //#end
                let ds = pr * (dp - delta_tile[ii / 4u]);
                //#repeat {{D4}}
                acc# += ds.x * q_tile[ii * D4 + #u] + ds.y * q_tile[(ii + 1u) * D4 + #u] + ds.z * q_tile[(ii + 2u) * D4 + #u] + ds.w * q_tile[(ii + 3u) * D4 + #u];
                //#end
            } else {
                //#repeat {{D4}}
                acc# += pr.x * g_tile[ii * D4 + #u] + pr.y * g_tile[(ii + 1u) * D4 + #u] + pr.z * g_tile[(ii + 2u) * D4 + #u] + pr.w * g_tile[(ii + 3u) * D4 + #u];
                //#end
            }
        }
    }
    if (j >= p.t) { return; }
    // Laid out as k or v is: side by side with the other gradients when they are packed.
    let grad_at = select(v_at, k_at, GRAD_K);
    //#repeat {{D4}}
    grad[grad_at + #u] = acc# * select(1.0, p.scale, GRAD_K);
    //#end
}
