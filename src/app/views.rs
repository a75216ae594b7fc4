//! What the model learned: the decision boundary of the 2-D sets, test digits with their
//! predictions and a confusion matrix, and the drawing pad.

use super::dom::{context, put_image, set_text};
use crate::data::{Labelled, DIGIT_SIDE};

/// The boundary grid: GRID × GRID points over [-EXTENT, EXTENT]².
pub const GRID: usize = 48;
const EXTENT: f32 = 1.25;

/// The grid's points as [GRID², 2] features, row by row from the top.
pub fn grid_points() -> Vec<f32> {
    let mut out = Vec::with_capacity(GRID * GRID * 2);
    for r in 0..GRID {
        for c in 0..GRID {
            let x = -EXTENT + 2.0 * EXTENT * (c as f32 + 0.5) / GRID as f32;
            let y = EXTENT - 2.0 * EXTENT * (r as f32 + 0.5) / GRID as f32;
            out.extend([x, y]);
        }
    }
    out
}

/// Draws the heatmap of P(class 1) on the grid, then the validation points.
pub fn draw_boundary(probs: &[f32], data: &Labelled) {
    let Some((canvas, ctx)) = context("boundary") else {
        return;
    };
    let (w, h) = (canvas.width() as f64, canvas.height() as f64);
    let mut rgba = Vec::with_capacity(GRID * GRID * 4);
    for cell in probs.chunks(2) {
        let p = cell.get(1).copied().unwrap_or(0.5);
        // Orange for class 0, blue for class 1, pale where unsure.
        let (r, g, b) = (
            245.0 - 150.0 * p,
            200.0 - 40.0 * (p - 0.5).abs(),
            120.0 + 120.0 * p,
        );
        rgba.extend([r as u8, g as u8, b as u8, 255]);
    }
    put_image(&ctx, &mut rgba, GRID as u32, GRID as u32, 0.0, 0.0, (w, h));
    let to_px = |v: f32, size: f64| ((v + EXTENT) / (2.0 * EXTENT)) as f64 * size;
    for i in 0..data.val.len() {
        let (x, y) = (data.val.x[2 * i], data.val.x[2 * i + 1]);
        ctx.begin_path();
        let _ = ctx.arc(
            to_px(x, w),
            h - to_px(y, h),
            3.0,
            0.0,
            std::f64::consts::TAU,
        );
        ctx.set_fill_style_str(if data.val.y[i] == 1 {
            "#1f4fb5"
        } else {
            "#c0551b"
        });
        ctx.fill();
        ctx.set_stroke_style_str("#ffffff");
        ctx.stroke();
    }
}

/// The first `count` test digits with their predicted labels: green when right, red and
/// crossed out when wrong (so that colour is not the only difference).
pub fn draw_digits(data: &Labelled, predicted: &[u32], count: usize) {
    let Some((_, ctx)) = context("digit-grid") else {
        return;
    };
    ctx.set_fill_style_str("#ffffff");
    ctx.fill_rect(0.0, 0.0, 336.0, 200.0);
    let per_row = 12;
    let cell = 28.0;
    for i in 0..count.min(data.val.len()).min(predicted.len()) {
        let (px, py) = (
            (i % per_row) as f64 * cell,
            (i / per_row) as f64 * (cell + 18.0),
        );
        let pixels = &data.val.x[i * DIGIT_SIDE * DIGIT_SIDE..(i + 1) * DIGIT_SIDE * DIGIT_SIDE];
        let mut rgba: Vec<u8> = pixels
            .iter()
            .flat_map(|&v| {
                let g = 255 - (v * 255.0) as u8;
                [g, g, g, 255]
            })
            .collect();
        put_image(
            &ctx,
            &mut rgba,
            DIGIT_SIDE as u32,
            DIGIT_SIDE as u32,
            px,
            py,
            (cell, cell),
        );
        let right = predicted[i] == data.val.y[i];
        ctx.set_fill_style_str(if right { "#1e8449" } else { "#b3261e" });
        ctx.set_font("13px sans-serif");
        let (x, y) = (px + 10.0, py + cell + 14.0);
        let _ = ctx.fill_text(&predicted[i].to_string(), x, y);
        if !right {
            ctx.fill_rect(x - 3.0, y - 5.0, 13.0, 1.5);
        }
    }
}

/// The confusion matrix of all test predictions: rows true class, columns predicted.
pub fn draw_confusion(data: &Labelled, predicted: &[u32]) {
    let Some((_, ctx)) = context("confusion") else {
        return;
    };
    let k = data.classes;
    let mut counts = vec![0usize; k * k];
    for (t, p) in data.val.y.iter().zip(predicted) {
        counts[*t as usize * k + (*p as usize).min(k - 1)] += 1;
    }
    let right: usize = (0..k).map(|i| counts[i * k + i]).sum();
    set_text(
        "digit-accuracy",
        &format!(
            "test accuracy {:.1}%",
            100.0 * right as f64 / predicted.len().max(1) as f64
        ),
    );
    let max = *counts.iter().max().unwrap_or(&1) as f64;
    let cell = 200.0 / k as f64;
    for t in 0..k {
        for p in 0..k {
            let v = counts[t * k + p] as f64 / max.max(1.0);
            let shade = (255.0 * (1.0 - v.sqrt())) as u8;
            ctx.set_fill_style_str(&format!("rgb({shade},{shade},255)"));
            ctx.fill_rect(
                20.0 + p as f64 * cell,
                20.0 + t as f64 * cell,
                cell - 1.0,
                cell - 1.0,
            );
        }
    }
    ctx.set_fill_style_str("#5a6270");
    ctx.set_font("10px sans-serif");
    let _ = ctx.fill_text("predicted →", 20.0, 12.0);
    for i in 0..k {
        let _ = ctx.fill_text(&i.to_string(), 6.0, 20.0 + (i as f64 + 0.6) * cell);
    }
}

/// The pad's ink as a 28 × 28 digit in [0, 1], like the training images; None when the pad is
/// blank.
pub fn pad_pixels() -> Option<Vec<f32>> {
    let (canvas, ctx) = context("pad")?;
    let (w, h) = (canvas.width() as usize, canvas.height() as usize);
    let data = ctx
        .get_image_data(0.0, 0.0, w as f64, h as f64)
        .ok()?
        .data();
    let mut out = vec![0.0f32; DIGIT_SIDE * DIGIT_SIDE];
    for y in 0..h {
        for x in 0..w {
            let ink = 1.0 - data[(y * w + x) * 4] as f32 / 255.0;
            out[(y * DIGIT_SIDE / h) * DIGIT_SIDE + x * DIGIT_SIDE / w] += ink;
        }
    }
    if out.iter().all(|&v| v == 0.0) {
        return None;
    }
    let per_cell = (w * h / (DIGIT_SIDE * DIGIT_SIDE)) as f32;
    Some(out.iter().map(|v| (v / per_cell * 1.6).min(1.0)).collect())
}

/// What the pad's guess says while the pad is empty.
pub const PAD_PROMPT: &str = "Draw a digit.";

pub fn clear_pad() {
    if let Some((canvas, ctx)) = context("pad") {
        ctx.set_fill_style_str("#ffffff");
        ctx.fill_rect(0.0, 0.0, canvas.width() as f64, canvas.height() as f64);
    }
}
