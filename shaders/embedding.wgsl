// Embedding gather: out[n, d] = weight[index[n], d], for the indices among the `rows` rows of
// the table from `first` that `weight` holds (a table larger than a binding is gathered a
// window at a time, src/ops/windows.rs). An index outside the vocabulary gives NaN. The table
// is f32 or f16 (TABLE).
//#slots TABLE

struct Params { n: u32, dim: u32, vocab: u32, first: u32, rows: u32 }
@group(0) @binding(0) var<uniform> p: Params;
//#include embedding_table_{{TABLE}}
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

//#include math

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (e >= p.n * p.dim) { return; }
    let row = index[e / p.dim];
    if (row >= p.vocab) {
        // Said once, by the window that ends the table.
        if (p.first + p.rows == p.vocab) { out[e] = nan(); }
    } else if (row >= p.first && row - p.first < p.rows) {
        out[e] = weight_at((row - p.first) * p.dim + e % p.dim);
    }
}
