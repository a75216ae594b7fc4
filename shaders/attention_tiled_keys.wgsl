// Keys and values staged a block at a time in workgroup memory, for the kernels that walk the
// keys (attention_tiled.wgsl and attention_tiled_dq.wgsl): coalesced vec4 loads, read back as
// broadcasts since every thread reads the same key.

@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;

const KEYS: u32 = BLOCK;
var<workgroup> k_tile: array<vec4<f32>, KEYS * D4>;
var<workgroup> v_tile: array<vec4<f32>, KEYS * D4>;

// Stages keys j0..j0 + KEYS of head h in batch b; every thread of the workgroup must call it.
fn stage_keys(b: u32, h: u32, j0: u32, lid: u32) {
    workgroupBarrier();
    for (var s = lid; s < KEYS * D4; s += ROWS) {
        let j = j0 + s / D4;
        k_tile[s] = k[in_at(b, j, h, p.k_off4) + s % D4];
        v_tile[s] = v[in_at(b, j, h, p.v_off4) + s % D4];
    }
    workgroupBarrier();
}
