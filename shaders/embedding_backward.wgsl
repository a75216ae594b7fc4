// Backward of the embedding gather as a scatter-add without atomics on floats: one workgroup
// per row of the table and chunk of the indices. The workgroup reads its chunk's indices a
// tile at a time into shared memory, each lane comparing one against the row; only a tile
// holding the row is walked, in order, adding the matching gradient rows, each lane owning
// PER_LANE columns. Gives [chunks, vocab, dim] partial sums (summed after, if more than one
// chunk), in the order of the indices: deterministic. A thread per table element scanning
// every index (the kernel before this) read GPT-2's 4,096 indices 38.6 million times a step.

struct Params { n: u32, dim: u32, vocab: u32, chunk: u32, chunks: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> index: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dw: array<f32>;

const WG: u32 = ELEMENTWISE_WORKGROUP;
const PER_LANE: u32 = 4u;
const NO_ROW: u32 = 0xffffffffu;

var<workgroup> tile: array<u32, ELEMENTWISE_WORKGROUP>;
// Matches seen so far in this workgroup: only ever grows, so a lane compares it with the count
// it saw after the previous tile.
var<workgroup> matches: atomic<u32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let item = wid.x + wid.y * nwg.x;
    if (item >= p.vocab * p.chunks) { return; }
    let part = item / p.vocab;
    let row = item % p.vocab;
    let start = part * p.chunk;
    let end = min(start + p.chunk, p.n);
    let out = (part * p.vocab + row) * p.dim;
    var seen = 0u;
    for (var d0 = 0u; d0 < p.dim; d0 += WG * PER_LANE) {
        var acc = array<f32, PER_LANE>();
        for (var t = start; t < end; t += WG) {
            // The previous tile's walk is over before its indices are replaced.
            workgroupBarrier();
            var id = NO_ROW;
            if (t + lid < end) { id = index[t + lid]; }
            tile[lid] = id;
            if (id == row) { atomicAdd(&matches, 1u); }
            workgroupBarrier();
            // (No barrier below: which lanes walk may differ as far as WGSL can tell.)
            let now = atomicLoad(&matches);
            if (now != seen) {
                seen = now;
                for (var k = 0u; k < min(WG, end - t); k++) {
                    if (tile[k] != row) { continue; }
                    let src = (t + k) * p.dim + d0 + lid;
                    for (var q = 0u; q < PER_LANE; q++) {
                        if (d0 + q * WG + lid < p.dim) { acc[q] += g[src + q * WG]; }
                    }
                }
            }
        }
        for (var q = 0u; q < PER_LANE; q++) {
            let d = d0 + q * WG + lid;
            if (d < p.dim) { dw[out + d] = acc[q]; }
        }
    }
}
