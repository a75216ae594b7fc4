// An operand of the matrix units' product kernels as they read it (shaders/matmul_f16_tiles.wgsl,
// src/ops/matmul/operand_f16.rs): its matrices, wherever they lie, copied one after another as
// f16, each stored row padded with zeros to `padded` halves (a multiple of 8), so that the
// kernels load whole packets of halves without a check along the row. Each invocation writes 8
// halves, two to a word, values past f16's range made infinities so that a loss scale sees
// them overflow (half_packing.wgsl). With APPLY `gelu`, each value goes through GELU first:
// the f16 input of the product after a GELU, made from the GELU's input in one pass
// (src/ops/linear.rs).

struct Params {
    // The stored matrices: `rows` of `cols` values, matrix z starting at offset + (z / heads) ×
    // batch + (z % heads) × head, its rows `row` apart.
    rows: u32,
    cols: u32,
    heads: u32,
    offset: u32,
    batch: u32,
    head: u32,
    row: u32,
    // The copy's rows, and its length in groups of 8 halves.
    padded: u32,
    eights: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<u32>>;

// The 8 source values an invocation packs, columns col.. of a row, zeros past the row's end.
struct Eight { low: vec4<f32>, high: vec4<f32> }

// How the source is read (src/ops/matmul/operand_f16.rs): matmul_operand_values.wgsl one
// value at a time, f32 or f16, at any offset; matmul_operand_vec4s.wgsl f32 rows and matrices
// that start at multiples of 4 values, two vec4 loads an invocation. Each binds the source as
// binding 1 and gives `eight_values`.
//#slots SOURCE APPLY
//#include matmul_operand_{{SOURCE}}
//#include math
//#include half_packing

// What is copied of each value (the APPLY slot): `copied` or `gelu`.
fn copied(x: f32) -> f32 {
    return x;
}

fn applied(v: vec4<f32>) -> vec4<f32> {
    return vec4<f32>({{APPLY}}(v.x), {{APPLY}}(v.y), {{APPLY}}(v.z), {{APPLY}}(v.w));
}

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (e >= p.eights) { return; }
    let eights_a_row = p.padded / 8u;
    let col = (e % eights_a_row) * 8u;
    let r = (e / eights_a_row) % p.rows;
    let z = e / (eights_a_row * p.rows);
    let start = p.offset + (z / p.heads) * p.batch + (z % p.heads) * p.head + r * p.row + col;
    let values = eight_values(start, col);
    let v = Eight(applied(values.low), applied(values.high));
    out[e] = vec4<u32>(packed_halves(v.low.xy), packed_halves(v.low.zw),
                       packed_halves(v.high.xy), packed_halves(v.high.zw));
}
