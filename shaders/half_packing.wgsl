// f32 values rounded to f16 and packed two to a word (src/tensor/half.rs's layout: the first
// value in the low half), by core WGSL (no shader-f16 needed), values past f16's range made
// infinities so that a loss scale sees them overflow: the f16 copies of a product's operands
// (matmul_operand_f16.wgsl), a product's C stored in f16 (matmul_store_f16.wgsl), LayerNorm's
// f16 output, and the fused attention's gradients stored in f16 (attention_results_f16.wgsl).

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
