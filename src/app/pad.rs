//! The drawing pad: the ink made into a digit as the training digits were, the 28 × 28 image
//! the model sees, and its probability of each digit as bars.

use super::dom::{context, put_image, sharp};
use super::views::digit_rgba;
use crate::data::{digit_from_ink, DIGIT_SIDE};

/// What the pad's guess says while the pad is empty.
pub const PAD_PROMPT: &str = "Draw a digit.";
/// The pen's width in pad pixels: strokes about as thick, once scaled, as MNIST's.
pub const PEN: f64 = 12.0;

/// The pad's ink as the model's input: cropped, scaled and centred like MNIST; None when the
/// pad is blank.
pub fn pad_digit() -> Option<Vec<f32>> {
    let (canvas, ctx) = context("pad")?;
    let (w, h) = (canvas.width() as usize, canvas.height() as usize);
    let data = ctx
        .get_image_data(0.0, 0.0, w as f64, h as f64)
        .ok()?
        .data();
    let ink: Vec<f32> = data.chunks(4).map(|p| 1.0 - p[0] as f32 / 255.0).collect();
    digit_from_ink(&ink, w, h)
}

pub fn clear_pad() {
    if let Some((canvas, ctx)) = context("pad") {
        ctx.set_fill_style_str("#ffffff");
        ctx.fill_rect(0.0, 0.0, canvas.width() as f64, canvas.height() as f64);
    }
    let _ = sharp("pad-input");
    let _ = sharp("pad-probs");
}

/// A stroke of the pen from `from` to `to`, in the pad's pixels.
pub fn stroke(from: (f64, f64), to: (f64, f64)) {
    let Some((_, ctx)) = context("pad") else {
        return;
    };
    ctx.set_stroke_style_str("#000000");
    ctx.set_line_width(PEN);
    ctx.set_line_cap("round");
    ctx.begin_path();
    ctx.move_to(from.0, from.1);
    ctx.line_to(to.0, to.1);
    ctx.stroke();
}

/// Shows the model's input and its probabilities.
pub fn show(digit: &[f32], probs: &[f32]) {
    if let Some((ctx, w, h)) = sharp("pad-input") {
        ctx.set_image_smoothing_enabled(false);
        let side = DIGIT_SIDE as u32;
        put_image(&ctx, &mut digit_rgba(digit), side, side, 0.0, 0.0, (w, h));
    }
    let Some((ctx, w, h)) = sharp("pad-probs") else {
        return;
    };
    let best = super::views::argmax(probs) as usize;
    let slot = w / probs.len() as f64;
    ctx.set_font("11px sans-serif");
    ctx.set_text_align("center");
    for (d, &p) in probs.iter().enumerate() {
        let bar = (h - 16.0) * p.clamp(0.0, 1.0) as f64;
        ctx.set_fill_style_str(if d == best { "#2f6fde" } else { "#aab4c4" });
        ctx.fill_rect(d as f64 * slot + 2.0, h - 14.0 - bar, slot - 4.0, bar);
        ctx.set_fill_style_str("#1c1f24");
        let _ = ctx.fill_text(&d.to_string(), (d as f64 + 0.5) * slot, h - 3.0);
    }
    ctx.set_text_align("left");
}
