// Batched C = op(A) · op(B), op = transpose when TA / TB, read in place (no transposed copy).
// Each workgroup of 16×16 threads computes a 128×128 tile of C through 16-deep slices of A and
// B staged in workgroup memory as vec4s (4 rows of A, or 4 columns of B, per element). Each
// thread owns 8 rows × 8 columns of C: rows ty*4.. and 64 + ty*4.., columns tx*4.. and
// 64 + tx*4.., in sixteen vec4 registers named, not indexed, so that bounds checks never
// touch the inner loop's registers; its workgroup reads are 4 vec4 loads per 64 FMAs.

//#include matmul_io

const DEPTH: u32 = 16u;

var<workgroup> a_tile: array<vec4<f32>, 512>; // [k][32 groups of 4 rows]
var<workgroup> b_tile: array<vec4<f32>, 512>; // [k][32 groups of 4 columns]

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) tid: u32) {
    let row0 = wid.y * 128u;
    let col0 = wid.x * 128u;
    let a_base = wid.z * p.a_batch_stride;
    let b_base = wid.z * p.b_batch_stride;
    var c00 = vec4<f32>(0.0);
    var c01 = vec4<f32>(0.0);
    var c10 = vec4<f32>(0.0);
    var c11 = vec4<f32>(0.0);
    var c20 = vec4<f32>(0.0);
    var c21 = vec4<f32>(0.0);
    var c30 = vec4<f32>(0.0);
    var c31 = vec4<f32>(0.0);
    var c40 = vec4<f32>(0.0);
    var c41 = vec4<f32>(0.0);
    var c50 = vec4<f32>(0.0);
    var c51 = vec4<f32>(0.0);
    var c60 = vec4<f32>(0.0);
    var c61 = vec4<f32>(0.0);
    var c70 = vec4<f32>(0.0);
    var c71 = vec4<f32>(0.0);

    for (var k0 = 0u; k0 < p.k; k0 += DEPTH) {
        // Two slots of each tile per thread, in the order that keeps global reads coalesced.
        for (var half = 0u; half < 2u; half++) {
            let slot = tid + half * 256u;
            let a_k = select(slot % DEPTH, slot / 32u, TA);
            let a_g = select(slot / DEPTH, slot % 32u, TA);
            let b_k = select(slot / 32u, slot % DEPTH, TB);
            let b_g = select(slot % 32u, slot / DEPTH, TB);
            let ar = row0 + a_g * 4u;
            a_tile[a_k * 32u + a_g] = vec4<f32>(load_a(a_base, ar, k0 + a_k), load_a(a_base, ar + 1u, k0 + a_k),
                                                load_a(a_base, ar + 2u, k0 + a_k), load_a(a_base, ar + 3u, k0 + a_k));
            let bc = col0 + b_g * 4u;
            b_tile[b_k * 32u + b_g] = vec4<f32>(load_b(b_base, k0 + b_k, bc), load_b(b_base, k0 + b_k, bc + 1u),
                                                load_b(b_base, k0 + b_k, bc + 2u), load_b(b_base, k0 + b_k, bc + 3u));
        }
        workgroupBarrier();
        for (var kk = 0u; kk < DEPTH; kk++) {
            let a0 = a_tile[kk * 32u + lid.y];
            let a1 = a_tile[kk * 32u + 16u + lid.y];
            let b0 = b_tile[kk * 32u + lid.x];
            let b1 = b_tile[kk * 32u + 16u + lid.x];
            c00 += a0.x * b0;
            c01 += a0.x * b1;
            c10 += a0.y * b0;
            c11 += a0.y * b1;
            c20 += a0.z * b0;
            c21 += a0.z * b1;
            c30 += a0.w * b0;
            c31 += a0.w * b1;
            c40 += a1.x * b0;
            c41 += a1.x * b1;
            c50 += a1.y * b0;
            c51 += a1.y * b1;
            c60 += a1.z * b0;
            c61 += a1.z * b1;
            c70 += a1.w * b0;
            c71 += a1.w * b1;
        }
        workgroupBarrier();
    }

    let c_base = wid.z * p.m * p.n;
    store(c_base, row0 + lid.y * 4u + 0u, col0 + lid.x * 4u, c00);
    store(c_base, row0 + lid.y * 4u + 0u, col0 + 64u + lid.x * 4u, c01);
    store(c_base, row0 + lid.y * 4u + 1u, col0 + lid.x * 4u, c10);
    store(c_base, row0 + lid.y * 4u + 1u, col0 + 64u + lid.x * 4u, c11);
    store(c_base, row0 + lid.y * 4u + 2u, col0 + lid.x * 4u, c20);
    store(c_base, row0 + lid.y * 4u + 2u, col0 + 64u + lid.x * 4u, c21);
    store(c_base, row0 + lid.y * 4u + 3u, col0 + lid.x * 4u, c30);
    store(c_base, row0 + lid.y * 4u + 3u, col0 + 64u + lid.x * 4u, c31);
    store(c_base, row0 + 64u + lid.y * 4u + 0u, col0 + lid.x * 4u, c40);
    store(c_base, row0 + 64u + lid.y * 4u + 0u, col0 + 64u + lid.x * 4u, c41);
    store(c_base, row0 + 64u + lid.y * 4u + 1u, col0 + lid.x * 4u, c50);
    store(c_base, row0 + 64u + lid.y * 4u + 1u, col0 + 64u + lid.x * 4u, c51);
    store(c_base, row0 + 64u + lid.y * 4u + 2u, col0 + lid.x * 4u, c60);
    store(c_base, row0 + 64u + lid.y * 4u + 2u, col0 + 64u + lid.x * 4u, c61);
    store(c_base, row0 + 64u + lid.y * 4u + 3u, col0 + lid.x * 4u, c70);
    store(c_base, row0 + 64u + lid.y * 4u + 3u, col0 + 64u + lid.x * 4u, c71);
}
