// q, k, v and dO in f16 for the causal attention kernels on the matrix units
// (attention_coop_common.wgsl, the INPUTS slot), as the f16 kernels' products store them
// (matmul_store_f16.wgsl): staged as they lie. Half the bytes of f32 to fetch, and half the
// registers to hold a block fetched ahead: on an H200 the three kernels took 2.65 ms of
// nanochar's step against 3.31 (docs/log/products.md, "q, k, v and dO in f16"). A value past
// f16's range was made an infinity by the product's store (matmul_store_f16.wgsl), and is
// reported as the f32 inputs' are (`halves`).

alias Value4 = vec4<f16>;

fn staged(v: Value4) -> vec4<f16> {
    overflowed = overflowed || any(abs(v) > vec4<f16>(f16(F16_MAX)));
    return v;
}
