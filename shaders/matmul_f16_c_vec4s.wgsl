// c_tile as the dialects with typed workgroup memory hold it (matmul_coop.wgsl,
// matmul_f16_alu.wgsl): C's staging (matmul_f16_tiles.wgsl), 4 floats an access.
var<workgroup> c_tile: array<vec4<f32>, C_FLOATS / 4u>;

fn c_get4(i: u32) -> vec4<f32> {
    return c_tile[i];
}

fn c_put4(i: u32, v: vec4<f32>) {
    c_tile[i] = v;
}
