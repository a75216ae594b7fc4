// Causal multi-head self-attention, forward. q, k, v and out are [B, T, C] with head h in
// columns h*D..(h+1)*D. One workgroup per (batch, head, query row i): scores against keys
// j <= i go to workgroup memory, then a stable softmax and the weighted sum of values.
// Saves lse = max + log(sum) per row for the backward pass.
//#slots T

struct Params { batch: u32, t: u32, c: u32, heads: u32, d: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;

//#include rowwise

var<{{SCORES}}> score: array<f32, {{T}}>;

@compute @workgroup_size(ROW_THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = row_of(wid, nwg, lid);
    let valid = row < p.batch * p.heads * p.t;
    let i = row % p.t;
    let h = (row / p.t) % p.heads;
    let b = row / (p.t * p.heads);
    let q_at = (b * p.t + i) * p.c + h * p.d;
    var m = -3.402823e38;
    if (valid) {
        for (var j = lane(lid); j <= i; j += LANES) {
            let k_at = (b * p.t + j) * p.c + h * p.d;
            var s = 0.0;
            for (var e = 0u; e < p.d; e++) { s += q[q_at + e] * k[k_at + e]; }
            s *= p.scale;
            score[j] = s;
            m = max(m, s);
        }
    }
    m = row_max(m, lid);
    var total = 0.0;
    if (valid) {
        for (var j = lane(lid); j <= i; j += LANES) {
            let e = exp(score[j] - m);
            score[j] = e;
            total += e;
        }
    }
    total = row_sum(total, lid);
    if (!valid) { return; }
    for (var e = lane(lid); e < p.d; e += LANES) {
        var acc = 0.0;
        for (var j = 0u; j <= i; j++) {
            acc += score[j] * v[(b * p.t + j) * p.c + h * p.d + e];
        }
        out[q_at + e] = acc / total;
    }
    if (lane(lid) == 0u) { lse[row] = m + log(total); }
}
