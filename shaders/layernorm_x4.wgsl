// LayerNorm's loads of x (layernorm.wgsl, layernorm_backward_fused.wgsl): this lane's x at
// columns j, j + LANES, j + 2 LANES and j + 3 LANES, 0 past the row: four loads in flight before
// any is used (one at a time, each waited for, the kernels ran at a third of the memory's speed
// on an H100, docs/BENCHMARKS.md). WGSL passes no storage array to a function, so each array a
// kernel loads this way has a loader of its own.
fn x4(base: u32, j: u32) -> vec4<f32> {
    var v = vec4<f32>(0.0);
    if (j < p.cols) { v.x = x[base + j]; }
    if (j + LANES < p.cols) { v.y = x[base + j + LANES]; }
    if (j + 2u * LANES < p.cols) { v.z = x[base + j + 2u * LANES]; }
    if (j + 3u * LANES < p.cols) { v.w = x[base + j + 3u * LANES]; }
    return v;
}
