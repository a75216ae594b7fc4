//! Weight histograms as small multiples: one panel per weight matrix, its values' spread over
//! ±4 standard deviations, redrawn at each evaluation so that a layer whose weights grow,
//! shrink or split shows it.

use super::dom::{hidpi, sharp};
use crate::train::Histogram;

const ID: &str = "weights";
/// Panels per row and the height of a row, in CSS pixels.
const COLUMNS: usize = 4;
const ROW: f64 = 62.0;
/// The most panels drawn (a large GPT has dozens of matrices).
const MOST: usize = 16;

pub fn draw(hists: &[Histogram]) {
    let shown = &hists[..hists.len().min(MOST)];
    let rows = shown.len().div_ceil(COLUMNS).max(1);
    // The canvas grows with the model: its height is set before drawing.
    if let Some((canvas, _, ratio)) = hidpi(ID) {
        canvas.set_height((rows as f64 * ROW * ratio).round() as u32);
    }
    let Some((ctx, w, _)) = sharp(ID) else {
        return;
    };
    let panel = w / COLUMNS as f64;
    ctx.set_font("11px sans-serif");
    for (i, h) in shown.iter().enumerate() {
        let (x, y) = ((i % COLUMNS) as f64 * panel, (i / COLUMNS) as f64 * ROW);
        ctx.set_fill_style_str("#5a6270");
        let name = h.name.strip_suffix(".weight").unwrap_or(&h.name);
        let _ = ctx.fill_text(name, x + 4.0, y + 11.0);
        let _ = ctx.fill_text(&format!("±{:.2}", h.range), x + panel - 40.0, y + ROW - 3.0);
        let most = h.counts.iter().copied().max().unwrap_or(1).max(1) as f64;
        let bar = (panel - 8.0) / h.counts.len() as f64;
        let height = ROW - 28.0;
        ctx.set_fill_style_str("#2f6fde");
        for (k, &c) in h.counts.iter().enumerate() {
            let b = height * c as f64 / most;
            ctx.fill_rect(
                x + 4.0 + k as f64 * bar,
                y + 15.0 + height - b,
                bar - 0.5,
                b,
            );
        }
    }
    let more = hists.len() - shown.len();
    let note = if more > 0 {
        format!(" ({more} more matrices not shown)")
    } else {
        String::new()
    };
    super::dom::set_text(
        "weights-caption",
        &format!("Weights of each matrix, ±4 standard deviations{note}."),
    );
}
