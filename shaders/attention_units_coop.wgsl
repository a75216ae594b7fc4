enable f16;
enable wgpu_cooperative_matrix;

// The causal attention kernels' tiles and matrices (attention_coop_common.wgsl) natively:
// wgpu's cooperative matrices, loaded from and stored to the tiles' vec4s, `at` a vec4's index
// and the stride in vec4s.

alias Left = coop_mat16x16<f16, A>;
alias Right = coop_mat16x16<f16, B>;
alias Sum = coop_mat16x16<f32, C>;

var<workgroup> s_tile: array<vec4<f32>, S_TILE4>;
var<workgroup> h_tile: array<vec4<f16>, BLOCK4>;
var<workgroup> blocks: array<vec4<f16>, 2u * BLOCK4>;

fn multiply_add(a: Left, b: Right, acc: Sum) -> Sum {
    return coopMultiplyAdd(a, b, acc);
}

fn s_tile_get4(at: u32) -> vec4<f32> {
    return s_tile[at];
}

fn h_tile_get4(at: u32) -> vec4<f16> {
    return h_tile[at];
}

fn h_tile_put4(at: u32, v: vec4<f16>) {
    h_tile[at] = v;
}

fn blocks_put4(at: u32, v: vec4<f16>) {
    blocks[at] = v;
}

// A 16 × 16 from `at`, rows ROW4 vec4s apart (coopLoadT reads rows, coopLoad columns).
fn blocks_left(at: u32) -> Left {
    return coopLoadT<Left>(&blocks[at], ROW4);
}

fn blocks_right(at: u32) -> Right {
    return coopLoadT<Right>(&blocks[at], ROW4);
}

fn blocks_right_transposed(at: u32) -> Right {
    return coopLoad<Right>(&blocks[at], ROW4);
}

fn h_tile_left(at: u32) -> Left {
    return coopLoadT<Left>(&h_tile[at], ROW4);
}

fn s_tile_store(acc: Sum, at: u32) {
    coopStoreT(acc, &s_tile[at], F32_ROW4);
}
