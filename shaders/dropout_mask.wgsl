// Whether element i survives dropout with probability p under seed: the PCG hash (Jarzynski
// and Olano, "Hash Functions for GPU Rendering", 2020) of i and the seed's hash, as a number in
// [0, 1), at least p. src/ops/dropout.rs computes the same on the CPU, bit for bit.
fn pcg(v: u32) -> u32 {
    let state = v * 747796405u + 2891336453u;
    let word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

fn kept(i: u32, seed: u32, p: f32) -> bool {
    return f32(pcg(i ^ pcg(seed)) >> 8u) / 16777216.0 >= p;
}
