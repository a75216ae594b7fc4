// Adds up layernorm_backward_fused.wgsl's partial sums [2, chunks, cols] into dw and db, a thread per
// column (neighbouring threads read neighbouring columns).

struct Params { cols: u32, chunks: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> partials: array<f32>;
@group(0) @binding(2) var<storage, read_write> dw: array<f32>;
@group(0) @binding(3) var<storage, read_write> db: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let col = id.x;
    if (col >= p.cols) { return; }
    var w = 0.0;
    var b = 0.0;
    for (var c = 0u; c < p.chunks; c++) {
        w += partials[c * p.cols + col];
        b += partials[(p.chunks + c) * p.cols + col];
    }
    dw[col] = w;
    db[col] = b;
}
