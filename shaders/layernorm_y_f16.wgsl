// LayerNorm's output in f16 (layernorm.wgsl), for a product that reads it as it lies (rows of
// a multiple of 8: src/ops/layernorm.rs): the row from `base`, each lane two values at a time
// from column 2 × `first`, rounded and packed as the products' f16 copies are.

//#include half_packing

@group(0) @binding(4) var<storage, read_write> y: array<u32>;

fn store_row(base: u32, first: u32, mean: f32, rstd: f32) {
    for (var j = 2u * first; j < p.cols; j += 2u * LANES) {
        let v = vec2<f32>(normed(base, j, mean, rstd), normed(base, j + 1u, mean, rstd));
        y[(base + j) >> 1u] = packed_halves(v);
    }
}
