//! The grids the views are read on, shared by the page, which draws them, and the training
//! worker, which reads the model on them: no page in it.

/// The boundary grid: GRID × GRID points over [-EXTENT, EXTENT]², drawn smoothed.
pub const GRID: usize = 96;
pub const EXTENT: f32 = 1.25;
/// The side of the grid each neuron's heatmap of the network view is computed on.
pub const NEURON_GRID: usize = 20;
/// Test digits shown in the digit grid (three rows).
pub const GRID_DIGITS: usize = 36;

/// The points of an n × n grid over the plane as [n², 2] features, row by row from the top.
pub fn grid_points(n: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(n * n * 2);
    for r in 0..n {
        for c in 0..n {
            let x = -EXTENT + 2.0 * EXTENT * (c as f32 + 0.5) / n as f32;
            let y = EXTENT - 2.0 * EXTENT * (r as f32 + 0.5) / n as f32;
            out.extend([x, y]);
        }
    }
    out
}

/// The index of the largest value: the class a model picks.
pub fn argmax(p: &[f32]) -> u32 {
    p.iter()
        .enumerate()
        .fold(0, |b, (i, v)| if *v > p[b] { i } else { b }) as u32
}
