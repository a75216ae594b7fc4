// dO, [B, T, C], of q's, k's and v's type (the INPUTS slot), as the backward kernels on the
// matrix units bind and fetch it (attention_coop_dq.wgsl, attention_coop_dkv.wgsl): a block of
// its rows as fetch_rows fetches q's, k's or v's.
@group(0) @binding(2) var<storage, read> g: array<Value4>;

fn grad_vec(at: u32, tid: u32, i: u32) -> Value4 {
    let v = tid + i * 128u;
    return g[(at + (v / 16u) * p.c) / 4u + v % 16u];
}

// The block of dO's 64 rows from `at` (btc_at).
fn fetch_grads(at: u32, tid: u32) -> Fetched {
    return Fetched(grad_vec(at, tid, 0u), grad_vec(at, tid, 1u), grad_vec(at, tid, 2u),
                   grad_vec(at, tid, 3u), grad_vec(at, tid, 4u), grad_vec(at, tid, 5u),
                   grad_vec(at, tid, 6u), grad_vec(at, tid, 7u));
}
