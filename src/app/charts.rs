//! Live charts of training and validation loss (smoothed, optionally on a log scale) and of
//! validation accuracy, drawn with plotters on a canvas.

use plotters::prelude::*;
use plotters_canvas::CanvasBackend;

/// One evaluation: the step, the training loss (raw), validation loss and accuracy.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub step: u64,
    pub train: f32,
    pub val: Option<f32>,
    pub acc: Option<f32>,
}

/// Exponential moving average with weight `alpha` on the past (TensorBoard's smoothing).
fn smooth(values: &[(u64, f32)], alpha: f32) -> Vec<(u64, f32)> {
    let mut out = Vec::with_capacity(values.len());
    let mut last = None;
    for &(s, v) in values {
        let m = match last {
            None => v,
            Some(l) => alpha * l + (1.0 - alpha) * v,
        };
        last = Some(m);
        out.push((s, m));
    }
    out
}

/// Draws both charts from the history.
pub fn draw(history: &[Point], log_scale: bool, smoothing: f32) {
    let _ = draw_loss(history, log_scale, smoothing);
    let _ = draw_accuracy(history);
}

fn draw_loss(history: &[Point], log_scale: bool, smoothing: f32) -> Option<()> {
    let root = CanvasBackend::new("loss-chart")?.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let y = |v: f32| if log_scale { v.max(1e-6).ln() } else { v };
    // Points that are not finite (a diverged run) would give the axes no range.
    let train: Vec<(u64, f32)> = history
        .iter()
        .map(|p| (p.step, y(p.train)))
        .filter(|p| p.1.is_finite())
        .collect();
    let train = smooth(&train, smoothing);
    let val: Vec<(u64, f32)> = history
        .iter()
        .filter_map(|p| p.val.map(|v| (p.step, y(v))))
        .collect();
    let last = history.last().map(|p| p.step).unwrap_or(1).max(1);
    let all = train.iter().chain(&val).map(|p| p.1);
    let (lo, hi) = all.fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (lo, hi) = if lo.is_finite() {
        (lo, hi.max(lo + 1e-3))
    } else {
        (0.0, 1.0)
    };
    let caption = if log_scale {
        "loss (natural log)"
    } else {
        "loss"
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(24)
        .y_label_area_size(44)
        .build_cartesian_2d(0u64..last, lo..hi)
        .ok()?;
    chart
        .configure_mesh()
        .x_desc("step")
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .ok()?;
    let blue = RGBColor(47, 111, 222);
    let orange = RGBColor(230, 126, 34);
    chart
        .draw_series(LineSeries::new(train, blue.stroke_width(2)))
        .ok()?
        .label("train")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], blue));
    chart
        .draw_series(LineSeries::new(val, orange.stroke_width(2)))
        .ok()?
        .label("validation")
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], orange));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.2))
        .draw()
        .ok()?;
    root.present().ok()
}

fn draw_accuracy(history: &[Point]) -> Option<()> {
    let root = CanvasBackend::new("acc-chart")?.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let acc: Vec<(u64, f32)> = history
        .iter()
        .filter_map(|p| p.acc.map(|a| (p.step, a)))
        .collect();
    let last = history.last().map(|p| p.step).unwrap_or(1).max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption("validation accuracy", ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(20)
        .y_label_area_size(44)
        .build_cartesian_2d(0u64..last, 0f32..1f32)
        .ok()?;
    chart
        .configure_mesh()
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .ok()?;
    chart
        .draw_series(LineSeries::new(acc, RGBColor(39, 174, 96).stroke_width(2)))
        .ok()?;
    root.present().ok()
}
