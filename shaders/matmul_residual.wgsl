// An input the shape of C added to it as it is stored (a residual connection), bound after the
// other inputs and before C.
@group(0) @binding({{RES}}) var<storage, read> residual: array<f32>;

// residual[at..at + 4] for columns col..col + 4 of one row, each index clamped to the row's
// last column (columns past it are not stored).
fn tail4(at: u32, col: u32) -> vec4<f32> {
    let last = at + p.n - 1u - col;
    return vec4<f32>(residual[min(at, last)], residual[min(at + 1u, last)],
                     residual[min(at + 2u, last)], residual[min(at + 3u, last)]);
}

//#include dropout_mask

// residual + dropout(C) (a transformer's residual branch while training): each value of C kept
// or dropped as shaders/dropout.wgsl drops the element of C's tensor at its index, the kept
// scaled. C is dense (its index is its place after c_offset), and K is not split: the sum pass
// knows no dropout (src/ops/matmul_plan.rs).
override DROPOUT: bool;

fn dropped4(at: u32, v: vec4<f32>) -> vec4<f32> {
    let i = at - p.c_offset;
    let s = p.drop_scale;
    return vec4<f32>(select(0.0, v.x * s, kept(i, p.drop_seed, p.drop_p)),
                     select(0.0, v.y * s, kept(i + 1u, p.drop_seed, p.drop_p)),
                     select(0.0, v.z * s, kept(i + 2u, p.drop_seed, p.drop_p)),
                     select(0.0, v.w * s, kept(i + 3u, p.drop_seed, p.drop_p)));
}

fn finish4(at: u32, v: vec4<f32>, residual: vec4<f32>) -> vec4<f32> {
    if (DROPOUT) { return dropped4(at, v) + residual; }
    return v + residual;
}
