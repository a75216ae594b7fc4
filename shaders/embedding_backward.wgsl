// Backward of the embedding gather as a scatter-add without atomics on floats: one workgroup
// per row of the table and chunk of the indices. The workgroup reads its chunk's indices a
// tile at a time, each lane comparing one against the row and setting its bit in the tile's
// mask of matches; the lanes then walk the set bits in order, adding the matching gradient
// rows, each lane owning PER_LANE columns. Gives [chunks, vocab, dim] partial sums (summed
// after, if more than one chunk), in the order of the indices: deterministic. A thread per
// table element scanning every index (an earlier kernel) read GPT-2's 4,096 indices 38.6
// million times a step; every lane walking every index of a tile that held a match (the kernel
// before this one) took nanochar's position embedding 0.1 ms on an H100.

struct Params { n: u32, dim: u32, vocab: u32, chunk: u32, chunks: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> index: array<u32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> dw: array<f32>;

const WG: u32 = ELEMENTWISE_WORKGROUP;
const PER_LANE: u32 = 4u;
const WORDS: u32 = ELEMENTWISE_WORKGROUP / 32u;

// Bit k of word k / 32 of mask[i % 3]: index t + k of the workgroup's i-th tile names its row.
// OR is commutative, so a mask is the same whatever order the lanes set it in. Three masks, so
// that one barrier a tile is enough: tile i's mask is set before the barrier and walked after
// it, and the mask of tile i - 1, which every lane walked before this barrier, is cleared after
// it for tile i + 2, whose lanes set it only after the next barrier.
var<workgroup> mask: array<array<atomic<u32>, WORDS>, 3>;
// How many bits each mask has set: a lane walks a mask's words only where its tile held a
// match (most tiles of a large vocabulary's rows hold none: reading the words every tile made
// GPT-2's step 1.7 ms slower on an H100). Cleared with the masks.
var<workgroup> counts: array<atomic<u32>, 3>;

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
    if (lid < 3u * WORDS) { atomicStore(&mask[lid / WORDS][lid % WORDS], 0u); }
    if (lid < 3u) { atomicStore(&counts[lid], 0u); }
    workgroupBarrier();
    var i = 0u;
    for (var d0 = 0u; d0 < p.dim; d0 += WG * PER_LANE) {
        var acc = array<f32, PER_LANE>();
        for (var t = start; t < end; t += WG) {
            let m = i % 3u;
            if (t + lid < end && index[t + lid] == row) {
                atomicOr(&mask[m][lid / 32u], 1u << (lid % 32u));
                atomicAdd(&counts[m], 1u);
            }
            workgroupBarrier();
            let later = (i + 2u) % 3u;
            if (lid < WORDS) { atomicStore(&mask[later][lid], 0u); }
            if (lid == 0u) { atomicStore(&counts[later], 0u); }
            i++;
            // Not `continue`: the loop's barrier must stay in uniform control flow.
            let walk = atomicLoad(&counts[m]) != 0u;
            for (var w = 0u; walk && w < WORDS; w++) {
                var bits = atomicLoad(&mask[m][w]);
                while (bits != 0u) {
                    let k = w * 32u + firstTrailingBit(bits);
                    bits &= bits - 1u;
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
