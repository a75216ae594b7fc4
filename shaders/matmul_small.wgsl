// Batched C = op(A) · op(B) for small outputs, where 128×128 tiles (matmul.wgsl) would leave
// most of the GPU idle: a 64×64 tile per workgroup, staged through 16-deep slices of A and B in
// workgroup memory; each of its 16×16 threads owns a 4×4 block held in four vec4 registers.
// Same parameters and bindings as matmul.wgsl. With K split (src/ops/matmul_split.rs), the
// workgroups of each batch take one chunk of K each (workgroup_id.z = batch × parts + part)
// and store their partial products, [batches × parts, m, n], with no bias or residual.

//#include matmul_io

const TILE: u32 = 64u;
const DEPTH: u32 = 16u;

var<workgroup> a_tile: array<array<f32, 64>, 16>; // [k][m]
var<workgroup> b_tile: array<array<f32, 64>, 16>; // [k][n]

// With A transposed (a weight gradient), op(A)'s row sums, the bias's gradient, stored after
// C's matrix by the workgroups of the first column of tiles (src/ops/matmul_bias_grad.rs):
// each thread sums the values of row tid % 64 it stages, and 4 threads' sums are added here.
override ROW_SUMS: bool;
// Causal attention's products (src/ops/matmul_plan.rs, `Causal`) skip what gives zeros or is
// not needed, as matmul.wgsl does: 1 only C[i, j] with j ≤ i is needed, 2 op(A)[i, k] is zero
// for k > i, 3 op(A)[i, k] is zero for k < i.
override CAUSAL: u32;

fn store_row_sums(c_base: u32, row0: u32, tid: u32, sums: f32) {
    a_tile[tid / TILE][tid % TILE] = sums;
    workgroupBarrier();
    if (tid < 16u) {
        var total = vec4<f32>(0.0);
        for (var j = 0u; j < 4u; j++) {
            let r = tid * 4u;
            total += vec4<f32>(a_tile[j][r], a_tile[j][r + 1u], a_tile[j][r + 2u], a_tile[j][r + 3u]);
        }
        store_sums(c_base, row0 + tid * 4u, total);
    }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row0 = wid.y * TILE;
    let col0 = wid.x * TILE;
    let batch = wid.z / p.parts;
    let a_base = a_start(batch);
    let b_base = b_start(batch);
    let k_first = (wid.z % p.parts) * p.k_chunk;
    let k_last = min(p.k, k_first + p.k_chunk);
    // The tile's K range shrinks for causal products, to nothing for a tile above the diagonal.
    let k_start = select(k_first, max(k_first, row0), CAUSAL == 3u);
    let above = CAUSAL == 1u && col0 >= row0 + TILE;
    let k_end = select(select(k_last, min(k_last, row0 + TILE), CAUSAL == 2u), k_start, above);
    let tid = lid.y * 16u + lid.x;

    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    var row_sums = 0.0;
    let ar = lid.y * 4u;
    let bc = lid.x * 4u;

    for (var k0 = k_start; k0 < k_end; k0 += DEPTH) {
        // 64×16 elements of each operand, 4 per thread, in the order that keeps reads coalesced;
        // written out, so that the four loads are in flight together (a loop is counted by
        // the WGSL compilers, and its iterations ran one after another).
        //#repeat 4
        {
            let e = tid + #u * 256u;
            if (TA) {
                let v = load_a(a_base, row0 + e % TILE, k0 + e / TILE);
                a_tile[e / TILE][e % TILE] = v;
                if (ROW_SUMS) { row_sums += v; }
            } else {
                a_tile[e % DEPTH][e / DEPTH] = load_a(a_base, row0 + e / DEPTH, k0 + e % DEPTH);
            }
            if (TB) {
                b_tile[e % DEPTH][e / DEPTH] = load_b(b_base, k0 + e % DEPTH, col0 + e / DEPTH);
            } else {
                b_tile[e / TILE][e % TILE] = load_b(b_base, k0 + e / TILE, col0 + e % TILE);
            }
        }
        //#end
        workgroupBarrier();
        // The slice's 16 depths written out: the tiles' depth index a constant.
        //#repeat 16
        {
            let av = vec4<f32>(a_tile[#u][ar], a_tile[#u][ar + 1u], a_tile[#u][ar + 2u], a_tile[#u][ar + 3u]);
            let bv = vec4<f32>(b_tile[#u][bc], b_tile[#u][bc + 1u], b_tile[#u][bc + 2u], b_tile[#u][bc + 3u]);
            acc0 += av.x * bv;
            acc1 += av.y * bv;
            acc2 += av.z * bv;
            acc3 += av.w * bv;
        }
        //#end
        workgroupBarrier();
    }

    let c_base = c_start(wid.z);
    if (ROW_SUMS && wid.x == 0u) { store_row_sums(c_base, row0, tid, row_sums); }
    let col = col0 + lid.x * 4u;
    let row = row0 + lid.y * 4u;
    store(c_base, row, col, acc0);
    store(c_base, row + 1u, col, acc1);
    store(c_base, row + 2u, col, acc2);
    store(c_base, row + 3u, col, acc3);
}
