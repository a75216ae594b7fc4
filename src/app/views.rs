//! What the classifiers learned: the decision boundary of the 2-D sets, and the test digits
//! with their predictions, the confusion matrix and the digits of a chosen cell.

use super::dom::{put_image, set_text, sharp};
pub use super::grid::{argmax, GRID_DIGITS};
use super::grid::{EXTENT, GRID};
use super::protocol::{Points, Tile};
use crate::data::DIGIT_SIDE;

/// Draws the heatmap of P(class 1) on the grid, then the points chosen: the training split's
/// small, the test split's larger.
pub fn draw_boundary(probs: &[f32], points: &Points, show: (bool, bool)) {
    let Some((ctx, w, h)) = sharp("boundary") else {
        return;
    };
    let mut rgba = Vec::with_capacity(GRID * GRID * 4);
    for cell in probs.chunks(2) {
        let p = cell.get(1).copied().unwrap_or(0.5);
        // Orange for class 0, blue for class 1, white where unsure (0.5), as in the network.
        let [r, g, b] = super::dom::diverging(2.0 * p - 1.0);
        rgba.extend([r, g, b, 255]);
    }
    ctx.set_image_smoothing_enabled(true);
    put_image(&ctx, &mut rgba, GRID as u32, GRID as u32, 0.0, 0.0, (w, h));
    if show.0 {
        draw_dots(&ctx, (w, h), &points.train, 2.0);
    }
    if show.1 {
        draw_dots(&ctx, (w, h), &points.test, 3.0);
    }
}

/// The training points alone on the plane, as the model gets them: the data view.
pub fn draw_data(points: &Points) {
    let Some((ctx, w, h)) = sharp("data-plot") else {
        return;
    };
    ctx.set_stroke_style_str("#e3e6eb");
    ctx.set_line_width(1.0);
    ctx.begin_path();
    ctx.move_to(w / 2.0, 0.0);
    ctx.line_to(w / 2.0, h);
    ctx.move_to(0.0, h / 2.0);
    ctx.line_to(w, h / 2.0);
    ctx.stroke();
    draw_dots(&ctx, (w, h), &points.train, 2.5);
    ctx.set_fill_style_str("#5a6270");
    ctx.set_font("11px sans-serif");
    let _ = ctx.fill_text("x", w - 10.0, h / 2.0 - 4.0);
    let _ = ctx.fill_text("y", w / 2.0 + 4.0, 11.0);
}

/// Dots for labelled points on a canvas of `size` CSS pixels over the plane.
fn draw_dots(
    ctx: &web_sys::CanvasRenderingContext2d,
    (w, h): (f64, f64),
    split: &[(f32, f32, u32)],
    radius: f64,
) {
    let to_px = |v: f32, size: f64| ((v + EXTENT) / (2.0 * EXTENT)) as f64 * size;
    for &(x, y, label) in split {
        ctx.begin_path();
        let _ = ctx.arc(
            to_px(x, w),
            h - to_px(y, h),
            radius,
            0.0,
            std::f64::consts::TAU,
        );
        ctx.set_fill_style_str(if label == 1 { "#1f4fb5" } else { "#c0551b" });
        ctx.fill();
        ctx.set_stroke_style_str("#ffffff");
        ctx.stroke();
    }
}

/// Digits per row of the digit grids, and the side of a digit there.
pub const PER_ROW: usize = 12;
pub const CELL: f64 = 28.0;
/// The height of a grid row: a digit and its label.
pub const ROW: f64 = CELL + 18.0;

/// Draws test digits on the grid `id` with their predicted labels: green when right, red and
/// struck through when wrong (so that colour is not the only difference); the `selected` one
/// framed.
pub fn draw_digits(id: &str, tiles: &[Tile], selected: Option<usize>) {
    let Some((ctx, _, _)) = sharp(id) else {
        return;
    };
    ctx.set_image_smoothing_enabled(false);
    ctx.set_font("13px sans-serif");
    for (slot, tile) in tiles.iter().enumerate() {
        let (px, py) = (
            (slot % PER_ROW) as f64 * CELL,
            (slot / PER_ROW) as f64 * ROW,
        );
        let mut rgba = digit_rgba(&tile.pixels);
        let side = DIGIT_SIDE as u32;
        put_image(&ctx, &mut rgba, side, side, px, py, (CELL, CELL));
        if selected == Some(tile.index) {
            ctx.set_stroke_style_str("#2f6fde");
            ctx.set_line_width(2.0);
            ctx.stroke_rect(px + 1.0, py + 1.0, CELL - 2.0, CELL - 2.0);
        }
        let right = tile.predicted == tile.truth;
        ctx.set_fill_style_str(if right { "#1e8449" } else { "#b3261e" });
        let (x, y) = (px + 10.0, py + CELL + 14.0);
        let _ = ctx.fill_text(&tile.predicted.to_string(), x, y);
        if !right {
            ctx.fill_rect(x - 3.0, y - 5.0, 13.0, 1.5);
        }
    }
}

/// A digit's pixels in [0, 1] as dark ink on white.
pub fn digit_rgba(pixels: &[f32]) -> Vec<u8> {
    pixels
        .iter()
        .flat_map(|&v| {
            let g = 255 - (v.clamp(0.0, 1.0) * 255.0) as u8;
            [g, g, g, 255]
        })
        .collect()
}

/// Where the confusion matrix's cells start, and their side.
pub const MATRIX_AT: (f64, f64) = (34.0, 34.0);
pub const MATRIX_CELL: f64 = 22.0;

/// The confusion matrix of all test predictions of the model at `step`, rows true class and
/// columns predicted, each cell with its count; each row's accuracy on its right; the chosen
/// cell framed.
pub fn draw_confusion(counts: &[usize], k: usize, chosen: Option<(usize, usize)>, step: u64) {
    let Some((ctx, _, _)) = sharp("confusion") else {
        return;
    };
    let right: usize = (0..k).map(|i| counts[i * k + i]).sum();
    let total: usize = counts.iter().sum();
    set_text(
        "digit-accuracy",
        &format!(
            "Accuracy at step {step}: {:.1}% ({right} of {}). Click a cell.",
            100.0 * right as f64 / total.max(1) as f64,
            total
        ),
    );
    let (x0, y0, cell) = (MATRIX_AT.0, MATRIX_AT.1, MATRIX_CELL);
    let max = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    ctx.set_font("11px sans-serif");
    ctx.set_text_align("center");
    for t in 0..k {
        for p in 0..k {
            let n = counts[t * k + p];
            let v = (n as f64 / max).sqrt();
            let shade = (255.0 * (1.0 - v)) as u8;
            ctx.set_fill_style_str(&format!("rgb({shade},{shade},255)"));
            let (x, y) = (x0 + p as f64 * cell, y0 + t as f64 * cell);
            ctx.fill_rect(x, y, cell - 1.0, cell - 1.0);
            if n > 0 {
                ctx.set_fill_style_str(if v > 0.6 { "#ffffff" } else { "#1c1f24" });
                let _ = ctx.fill_text(&n.to_string(), x + cell / 2.0, y + cell / 2.0 + 4.0);
            }
        }
    }
    if let Some((t, p)) = chosen {
        ctx.set_stroke_style_str("#b3261e");
        ctx.set_line_width(2.0);
        let (x, y) = (x0 + p as f64 * cell, y0 + t as f64 * cell);
        ctx.stroke_rect(x - 1.0, y - 1.0, cell + 1.0, cell + 1.0);
    }
    ctx.set_fill_style_str("#5a6270");
    ctx.set_font("11px sans-serif");
    for i in 0..k {
        let mid = (i as f64 + 0.5) * cell;
        let _ = ctx.fill_text(&i.to_string(), x0 - 8.0, y0 + mid + 4.0);
        let _ = ctx.fill_text(&i.to_string(), x0 + mid, y0 - 6.0);
        let total: usize = counts[i * k..(i + 1) * k].iter().sum();
        let share = counts[i * k + i] as f64 / total.max(1) as f64;
        let _ = ctx.fill_text(
            &format!("{:.0}%", 100.0 * share),
            x0 + k as f64 * cell + 18.0,
            y0 + mid + 4.0,
        );
    }
    ctx.set_text_align("left");
    let _ = ctx.fill_text("guessed →", x0, 12.0);
    let _ = ctx.fill_text("true ↓", 0.0, 12.0);
    let _ = ctx.fill_text("right", x0 + k as f64 * cell + 4.0, y0 - 6.0);
}
