// q, k, v and dO in f32 for the causal attention kernels on the matrix units
// (attention_coop_common.wgsl, the INPUTS slot): each vec4 rounded to f16 as it is staged, and
// a value past f16's range reported (`halves`).

alias Value4 = vec4<f32>;

fn staged(v: Value4) -> vec4<f16> {
    return halves(v);
}
