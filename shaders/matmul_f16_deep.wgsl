// The matrix units' slices where the device's workgroup memory allows 45,056 bytes
// (src/ops/matmul/plan.rs): 64 deep, the f16 operands read a packet of 8 halves (16 bytes) a
// load. Deeper slices keep twice the work in flight for the same registers and barriers: on an
// H200 natively matmul_4096 took 1.02 ms so against 1.28 with 32-deep slices of 4-half packets
// and 1.81 with f32 operands (docs/log/products.md). WGSL reads 16 bytes of f16 only as u32s,
// widened here and rounded back as they are staged (exact: they were halves).

const DEPTH: u32 = 64u;
const PACKET: u32 = 8u;
alias Packet = vec4<u32>;

@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;

// Packet `at` of A or B, or zeros where not `inside`: the load is always made (at 0 outside)
// and its value selected, as in matmul_vec4_io.wgsl.
fn a_packet(at: u32, inside: bool) -> Packet {
    return select(Packet(), a[select(0u, at, inside)], inside);
}

fn b_packet(at: u32, inside: bool) -> Packet {
    return select(Packet(), b[select(0u, at, inside)], inside);
}

fn low_halves(v: Packet) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y));
}

fn high_halves(v: Packet) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(v.z), unpack2x16float(v.w));
}

// Packet v at half `at` of A's tile (`in_a`) or B's: two stores of 4 halves side by side, in
// one order for every lane (the compiler can make them one 16-byte store). Natively on an H200
// the order varying by lane (as Chrome's dialect once staged halves, against banks' conflicts)
// made matmul_4096 take 1.37-1.43 ms against 1.18-1.24 (docs/log/products.md).
fn stage_packet(at: u32, v: Packet, in_a: bool) {
    let low = vec4<f16>(low_halves(v));
    let high = vec4<f16>(high_halves(v));
    if (in_a) {
        stage_a(at, low);
        stage_a(at + 4u, high);
    } else {
        stage_b(at, low);
        stage_b(at + 4u, high);
    }
}
