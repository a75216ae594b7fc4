// Attention backward, per query row i: with p_ij = exp(s_ij - lse_i), dp_ij = dO_i·v_j and
// delta_i = dO_i·O_i, ds_ij = p_ij (dp_ij - delta_i) and dq_i = scale Σ_j ds_ij k_j.
// Also writes delta for the key-side kernel.
//#slots T

struct Params { batch: u32, t: u32, c: u32, heads: u32, d: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> o: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<f32>;
@group(0) @binding(6) var<storage, read> lse: array<f32>;
@group(0) @binding(7) var<storage, read_write> dq: array<f32>;
@group(0) @binding(8) var<storage, read_write> delta: array<f32>;

//#include rowwise

var<{{SCORES}}> ds: array<f32, {{T}}>;

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.batch * p.heads * p.t;
    let i = row % p.t;
    let h = (row / p.t) % p.heads;
    let b = row / (p.t * p.heads);
    let q_at = (b * p.t + i) * p.c + h * p.d;
    var part = 0.0;
    if (valid) {
        for (var e = lane(lid); e < p.d; e += LANES) { part += dout[q_at + e] * o[q_at + e]; }
    }
    let dlt = row_sum(part, lid);
    if (valid) {
        let l = lse[row];
        for (var j = lane(lid); j <= i; j += LANES) {
            let kv_at = (b * p.t + j) * p.c + h * p.d;
            var s = 0.0;
            var dp = 0.0;
            for (var e = 0u; e < p.d; e++) {
                s += q[q_at + e] * k[kv_at + e];
                dp += dout[q_at + e] * v[kv_at + e];
            }
            ds[j] = exp(s * p.scale - l) * (dp - dlt);
        }
    }
    row_barrier();
    if (!valid) { return; }
    for (var e = lane(lid); e < p.d; e += LANES) {
        var acc = 0.0;
        for (var j = 0u; j <= i; j++) {
            acc += ds[j] * k[(b * p.t + j) * p.c + h * p.d + e];
        }
        dq[q_at + e] = acc * p.scale;
    }
    if (lane(lid) == 0u) { delta[row] = dlt; }
}
