// First pass of the softmax cross-entropy of long rows (a vocabulary's logits), spread over
// blocks of columns so that a few hundred rows still fill a GPU: each workgroup takes one
// row's block of BLOCK columns and writes its (max, sum of exp(x - max)), which
// cross_entropy_blocks.wgsl combines into the row's logsumexp (src/ops/linear_cross_entropy.rs).

//#include cross_entropy_block

@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> partials: array<vec2<f32>>;

var<workgroup> scratch: array<vec2<f32>, THREADS>;

// (max, sum of exp(v - max)) of two such pairs.
fn combine(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let m = max(a.x, b.x);
    return vec2<f32>(m, a.y * exp(a.x - m) + b.y * exp(b.x - m));
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let at = row_and_block(wid, nwg);
    let row = at.x;
    let block = at.y;
    if (row >= p.rows) { return; }
    let base = row * p.cols;
    let end = min((block + 1u) * BLOCK, p.cols);
    // One pass: each thread keeps its own running max and its sum rescaled as the max grows.
    var acc = vec2<f32>(-3.402823e38, 0.0);
    for (var j = block * BLOCK + lid; j < end; j += THREADS) {
        acc = combine(acc, vec2<f32>(x[base + j], 1.0));
    }
    scratch[lid] = acc;
    workgroupBarrier();
    for (var stride = THREADS / 2u; stride > 0u; stride /= 2u) {
        if (lid < stride) { scratch[lid] = combine(scratch[lid], scratch[lid + stride]); }
        workgroupBarrier();
    }
    if (lid == 0u) { partials[row * p.blocks + block] = scratch[0]; }
}
