// An operand of the matrix units' product kernels as they read it (shaders/matmul_f16_tiles.wgsl,
// src/ops/matmul/operand_f16.rs): its matrices, wherever they lie, copied one after another as
// f16, each stored row padded with zeros to `padded` halves (a multiple of 8), so that the
// kernels load whole packets of halves without a check along the row. Each invocation writes 8
// halves, two to a word (src/tensor/half.rs's layout), packed by core WGSL (no shader-f16
// needed) with values past f16's range made infinities, so that a loss scale sees them
// overflow.

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
// f32 values, or halves two to a word: SOURCE_F16.
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<u32>>;

override SOURCE_F16: bool;

// f16's largest finite value, and the f32 bits from which values round past it.
const F16_MAX: f32 = 65504.0;
const PAST_F16: u32 = 0x477ff000u;

// Two f32 values rounded to f16 and packed into a word. `pack2x16float` leaves values past
// f16's range undefined, so they are held inside it for the packing and then made infinities
// (NaN stays NaN), told apart by their bits: a compiler may assume values are finite.
fn packed_halves(v: vec2<f32>) -> u32 {
    let word = pack2x16float(clamp(v, vec2<f32>(-F16_MAX), vec2<f32>(F16_MAX)));
    let bits = bitcast<vec2<u32>>(v);
    let size = bits & vec2<u32>(0x7fffffffu);
    let past = size >= vec2<u32>(PAST_F16);
    let nan = size > vec2<u32>(0x7f800000u);
    let sign = (bits >> vec2<u32>(16u)) & vec2<u32>(0x8000u);
    let special = select(sign | vec2<u32>(0x7c00u), vec2<u32>(0x7e00u), nan);
    let halves = select(vec2<u32>(word & 0xffffu, word >> 16u), special, past);
    return halves.x | (halves.y << 16u);
}

// Source element i where column `col` is inside the row, else 0. Past the buffer's last
// element (`last`) it loads that one and drops it: a load without a branch, so that an
// invocation's 8 are in flight at once.
fn value_at(i: u32, col: u32, last: u32) -> f32 {
    let at = min(i, last);
    if (SOURCE_F16) {
        return select(0.0, unpack2x16float(x[at >> 1u])[at & 1u], col < p.cols);
    }
    return select(0.0, bitcast<f32>(x[at]), col < p.cols);
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
    let last = select(arrayLength(&x) - 1u, 2u * arrayLength(&x) - 1u, SOURCE_F16);
    var words = vec4<u32>(0u);
    for (var j = 0u; j < 4u; j++) {
        let lo = value_at(start + 2u * j, col + 2u * j, last);
        let hi = value_at(start + 2u * j + 1u, col + 2u * j + 1u, last);
        words[j] = packed_halves(vec2<f32>(lo, hi));
    }
    out[e] = words;
}
