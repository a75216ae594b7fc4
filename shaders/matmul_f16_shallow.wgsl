// The matrix units' slices where the device's workgroup memory does not allow the deep ones
// (Chrome's 32 KiB: src/ops/matmul/plan.rs): 32 deep, 28,672 bytes, the f16 operands read a
// packet of 4 halves (8 bytes) a load. Packets of 8 halves were slower at this depth (2.57 ms
// against 1.50 for matmul_4096 natively on an H200: docs/log/products.md).

const DEPTH: u32 = 32u;
const PACKET: u32 = 4u;
alias Packet = vec4<f16>;

@group(0) @binding(1) var<storage, read> a: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f16>>;

// Packet `at` of A or B, or zeros where not `inside`: the load is always made (at 0 outside)
// and its value selected, as in matmul_vec4_io.wgsl.
fn a_packet(at: u32, inside: bool) -> Packet {
    return select(Packet(), a[select(0u, at, inside)], inside);
}

fn b_packet(at: u32, inside: bool) -> Packet {
    return select(Packet(), b[select(0u, at, inside)], inside);
}

fn low_halves(v: Packet) -> vec4<f32> {
    return vec4<f32>(v);
}

fn high_halves(v: Packet) -> vec4<f32> {
    return vec4<f32>(0.0);
}

// Packet v at half `at` of A's tile (`in_a`) or B's.
fn stage_packet(at: u32, v: Packet, in_a: bool) {
    if (in_a) {
        stage_a(at, v);
    } else {
        stage_b(at, v);
    }
}
