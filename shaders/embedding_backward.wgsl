// Backward of the embedding gather as a scatter-add without atomics: each thread owns one
// weight element of one chunk of the indices and sums the gradient rows of that chunk whose
// index names its row, giving [chunks, vocab, dim] partial sums (summed after, if more than
// one chunk). Deterministic.

struct Params { n: u32, dim: u32, vocab: u32, chunk: u32, chunks: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> index: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dw: array<f32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    let size = p.vocab * p.dim;
    if (e >= size * p.chunks) { return; }
    let part = e / size;
    let row = (e % size) / p.dim;
    let d = e % p.dim;
    var acc = 0.0;
    for (var i = part * p.chunk; i < min(part * p.chunk + p.chunk, p.n); i++) {
        if (index[i] == row) { acc += g[i * p.dim + d]; }
    }
    dw[e] = acc;
}
