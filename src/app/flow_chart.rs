//! The gradient-flow chart: per layer, the gradient's norm and the update-to-weight ratio at
//! each evaluation, on log axes, a line per layer shaded by depth.

use super::charts::{mesh, Ratio};
use crate::train::Flow;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;

const ID: &str = "flow-chart";
/// The update-to-weight ratio usually called healthy (Karpathy's rule of thumb).
const HEALTHY_RATIO: f32 = 1e-3;
/// Layers named in a legend at most; a deeper model's are told apart by shade alone.
const LEGEND_MOST: usize = 6;
/// A gradient norm below this is none: the layer has stopped learning (dead ReLUs).
const NO_GRADIENT: f32 = 1e-12;

/// Draws both panels from the flows of the run so far, over its steps up to `last_step` (the
/// loss chart's), so that both charts put a step at the same place.
pub fn draw(flows: &[Flow], last_step: u64) -> Option<()> {
    let r = Ratio::of(ID)?;
    let root = CanvasBackend::new(ID)?.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let (left, right) = root.split_horizontally(root.dim_in_pixel().0 / 2);
    let last = flows.last().map_or(1, |f| f.step).max(last_step).max(1);
    panel(
        &left,
        r,
        "gradient norm",
        last,
        flows,
        |l| l.grad_norm,
        None,
    )?;
    panel(
        &right,
        r,
        "update / weight",
        last,
        flows,
        |l| l.update_ratio,
        Some(HEALTHY_RATIO),
    )?;
    super::dom::set_text("flow-note", &verdict(flows.last()));
    root.present().ok()
}

/// What the latest flow says in words, when something is wrong: a run that diverged, layers
/// that stopped learning.
fn verdict(flow: Option<&Flow>) -> String {
    let Some(flow) = flow else {
        return String::new();
    };
    if flow.skipped {
        return format!(
            "At step {}, gradients overflowed f16's range: mixed precision skipped that step \
             and halved its loss scale, as it does now and then.",
            flow.step
        );
    }
    let bad = |v: f32| !v.is_finite();
    if flow
        .layers
        .iter()
        .any(|l| bad(l.grad_norm) || bad(l.update_ratio))
    {
        return format!("At step {}, the run diverged.", flow.step);
    }
    let stopped: Vec<&str> = flow
        .layers
        .iter()
        .filter(|l| l.grad_norm < NO_GRADIENT)
        .map(|l| l.layer.as_str())
        .collect();
    match stopped.as_slice() {
        [] => String::new(),
        names => format!("Stopped learning (no gradient): {}.", names.join(", ")),
    }
}

/// One panel: a line per layer of `figure` over the steps, with a dashed reference line.
fn panel(
    area: &DrawingArea<CanvasBackend, plotters::coord::Shift>,
    r: Ratio,
    caption: &str,
    last: u64,
    flows: &[Flow],
    figure: fn(&crate::train::LayerFlow) -> f32,
    reference: Option<f32>,
) -> Option<()> {
    let values = flows.iter().flat_map(|f| f.layers.iter().map(figure));
    let shown: Vec<f32> = values
        .chain(reference)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    // A layer with no gradient at all is drawn at the floor, not left out of a log axis.
    let lo = shown.iter().copied().fold(f32::INFINITY, f32::min);
    let hi = shown.iter().copied().fold(0.0, f32::max);
    let (lo, hi) = if lo.is_finite() {
        (lo * 0.8, hi.max(lo * 1.1) * 1.25)
    } else {
        (1e-4, 1.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, r.font(13.0))
        .margin(r.px(6.0))
        .x_label_area_size(r.px(30.0))
        .y_label_area_size(r.px(44.0))
        .build_cartesian_2d(0u64..last, (lo..hi).log_scale())
        .ok()?;
    mesh(&mut chart, r, Some("step"), 4)?;
    let layers = flows.last().map_or(0, |f| f.layers.len());
    for l in 0..layers {
        let points = flows.iter().filter_map(|f| {
            let v = figure(f.layers.get(l)?);
            let v = if v == 0.0 { lo } else { v };
            (v.is_finite() && v > 0.0).then_some((f.step, v.max(lo)))
        });
        let colour = depth_colour(l, layers);
        let series = chart
            .draw_series(LineSeries::new(
                points.clone(),
                colour.stroke_width(r.px(1.5)),
            ))
            .ok()?;
        if layers <= LEGEND_MOST {
            let name = flows
                .last()
                .and_then(|f| f.layers.get(l))
                .map(|f| f.layer.clone());
            let key = r.px(12.0) as i32;
            series
                .label(name.unwrap_or_default())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + key, y)], colour.stroke_width(2))
                });
        }
        // Dots too, so that the first evaluation's figures show before there is a line.
        let dot = r.px(2.0) as i32;
        chart
            .draw_series(points.map(|p| Circle::new(p, dot, colour.filled())))
            .ok()?;
    }
    if reference.is_none() && layers <= LEGEND_MOST {
        chart
            .configure_series_labels()
            .label_font(r.font(11.0))
            .background_style(WHITE.mix(0.8))
            .border_style(RGBColor(215, 219, 226))
            .position(SeriesLabelPosition::LowerLeft)
            .draw()
            .ok()?;
    }
    if let Some(v) = reference {
        let grey = RGBColor(120, 120, 120).stroke_width(r.px(1.0));
        let line = DashedLineSeries::new([(0, v), (last, v)], r.px(5.0), r.px(4.0), grey);
        chart.draw_series(line).ok()?;
    }
    Some(())
}

/// Pale blue for the layer nearest the input to dark blue for the one nearest the output.
fn depth_colour(l: usize, layers: usize) -> RGBColor {
    let t = l as f64 / (layers.max(2) - 1) as f64;
    let mix = |a: f64, b: f64| (a + (b - a) * t) as u8;
    RGBColor(mix(150.0, 16.0), mix(190.0, 40.0), mix(240.0, 110.0))
}
