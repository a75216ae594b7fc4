// Second pass of the softmax cross-entropy of long rows (cross_entropy_partials.wgsl made each
// block's (max, sum)): each workgroup combines its row's blocks into the logsumexp, and with
// GRAD writes its block of the gradient scale (softmax(x) - onehot(target)) over the logits
// themselves (each value is read, then overwritten, by one thread: a chunk of GPT-2's logits
// and their gradient would otherwise be two 128 MiB buffers); the thread whose column is the
// target writes the row's loss scale (logsumexp - x[target]). A target outside
// the classes gives a NaN loss, which the training loop reports (src/ops/linear_cross_entropy.rs).

//#include cross_entropy_block

@group(0) @binding(1) var<storage, read> targets: array<u32>;
@group(0) @binding(2) var<storage, read> partials: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;
@group(0) @binding(4) var<storage, read_write> loss: array<f32>;

//#include math

override GRAD: bool;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let at = row_and_block(wid, nwg);
    let row = at.x;
    let block = at.y;
    if (row >= p.rows) { return; }
    var m = -3.402823e38;
    for (var b = 0u; b < p.blocks; b++) { m = max(m, partials[row * p.blocks + b].x); }
    var s = 0.0;
    for (var b = 0u; b < p.blocks; b++) {
        let part = partials[row * p.blocks + b];
        s += part.y * exp(part.x - m);
    }
    let lse = m + log(s);
    let t = targets[row];
    let base = row * p.cols;
    if (t >= p.cols && block == 0u && lid == 0u) { loss[row] = nan(); }
    let end = min((block + 1u) * BLOCK, p.cols);
    for (var j = block * BLOCK + lid; j < end; j += THREADS) {
        let v = x[base + j];
        if (j == t) { loss[row] = p.scale * (lse - v); }
        if (GRAD) { x[base + j] = p.scale * (exp(v - lse) - select(0.0, 1.0, j == t)); }
    }
}
