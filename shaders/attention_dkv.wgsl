// Attention backward, per key row j: over the queries i >= j that see it,
// dv_j = Σ_i p_ij dO_i and dk_j = scale Σ_i ds_ij q_i (see attention_dq.wgsl).
//#slots T

struct Params { batch: u32, t: u32, c: u32, heads: u32, d: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> dout: array<f32>;
@group(0) @binding(5) var<storage, read> lse: array<f32>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;
@group(0) @binding(7) var<storage, read_write> dk: array<f32>;
@group(0) @binding(8) var<storage, read_write> dv: array<f32>;

//#include rowwise

var<{{SCORES}}> prob: array<f32, {{T}}>;
var<{{SCORES}}> ds: array<f32, {{T}}>;

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.batch * p.heads * p.t;
    let j = row % p.t;
    let bh = row / p.t;
    let h = bh % p.heads;
    let b = bh / p.heads;
    let k_at = (b * p.t + j) * p.c + h * p.d;
    if (valid) {
        for (var i = j + lane(lid); i < p.t; i += LANES) {
            let q_at = (b * p.t + i) * p.c + h * p.d;
            var s = 0.0;
            var dp = 0.0;
            for (var e = 0u; e < p.d; e++) {
                s += q[q_at + e] * k[k_at + e];
                dp += dout[q_at + e] * v[k_at + e];
            }
            let pr = exp(s * p.scale - lse[bh * p.t + i]);
            prob[i] = pr;
            ds[i] = pr * (dp - delta[bh * p.t + i]);
        }
    }
    row_barrier();
    if (!valid) { return; }
    for (var e = lane(lid); e < p.d; e += LANES) {
        var acc_k = 0.0;
        var acc_v = 0.0;
        for (var i = j; i < p.t; i++) {
            let q_at = (b * p.t + i) * p.c + h * p.d;
            acc_k += ds[i] * q[q_at + e];
            acc_v += prob[i] * dout[q_at + e];
        }
        dk[k_at + e] = acc_k * p.scale;
        dv[k_at + e] = acc_v;
    }
}
