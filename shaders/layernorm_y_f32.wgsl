// LayerNorm's output in f32 (layernorm.wgsl): the row from `base`, each lane a value at a time
// from column `first`.

@group(0) @binding(4) var<storage, read_write> y: array<f32>;

fn store_row(base: u32, first: u32, mean: f32, rstd: f32) {
    for (var j = first; j < p.cols; j += LANES) {
        y[base + j] = normed(base, j, mean, rstd);
    }
}
