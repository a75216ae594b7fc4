//! Live charts of training and validation loss (smoothed, optionally on a log scale) and of
//! validation accuracy, drawn with plotters on a canvas.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;

/// A point of the run: the step, the training loss read back there (None at the evaluation of
/// a new model), and, at an evaluation, validation loss and accuracy.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub step: u64,
    pub train: Option<f32>,
    pub val: Option<f32>,
    pub acc: Option<f32>,
    /// A LoRA run's validation loss on the text its base model learnt.
    pub base: Option<f32>,
}

/// Earlier runs' validation curves to draw beside this run's: a label and the points.
pub type Overlay = (String, Vec<(u64, f32)>);

/// Draws both charts from the history, with the chosen earlier runs on the loss chart and a
/// dashed line at each of `marks` (the schedule's end, a checkpoint loaded) the run passed.
pub fn draw(
    history: &[Point],
    overlays: &[Overlay],
    marks: &[u64],
    log_scale: bool,
    smoothing: f32,
) {
    let _ = draw_loss(history, overlays, marks, log_scale, smoothing);
    let _ = draw_accuracy(history);
}

/// Backing pixels per CSS pixel of a chart's canvas, set up for this screen; sizes in CSS
/// pixels times this are drawn at the size the page means, and sharp.
#[derive(Clone, Copy)]
pub struct Ratio(pub f64);

impl Ratio {
    /// Sets up the canvas `id` (see `dom::hidpi`) and returns its ratio.
    pub fn of(id: &str) -> Option<Ratio> {
        super::dom::hidpi(id).map(|(_, _, r)| Ratio(r))
    }

    pub fn px(self, css: f64) -> u32 {
        (css * self.0).round() as u32
    }

    pub fn font(self, css: f64) -> (&'static str, f64) {
        ("sans-serif", css * self.0)
    }
}

/// The mesh of a chart: no minor lines, labels at the page's size.
pub fn mesh<'a, X, Y>(
    chart: &mut ChartContext<'a, CanvasBackend, Cartesian2d<X, Y>>,
    r: Ratio,
    x_desc: Option<&str>,
    y_labels: usize,
) -> Option<()>
where
    X: Ranged<ValueType = u64> + ValueFormatter<u64>,
    Y: Ranged + ValueFormatter<<Y as Ranged>::ValueType>,
{
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(WHITE.mix(0.0))
        .y_labels(y_labels)
        .label_style(r.font(11.0))
        .axis_desc_style(r.font(11.0));
    if let Some(d) = x_desc {
        mesh.x_desc(d);
    }
    mesh.draw().ok()
}

fn draw_loss(
    history: &[Point],
    overlays: &[Overlay],
    marks: &[u64],
    log_scale: bool,
    smoothing: f32,
) -> Option<()> {
    let r = Ratio::of("loss-chart")?;
    let root = CanvasBackend::new("loss-chart")?.into_drawing_area();
    root.fill(&WHITE).ok()?;
    // Points that are not finite (a diverged run), or not positive on a log axis, would give
    // the axes no range.
    let shown = |v: f32| v.is_finite() && (!log_scale || v > 0.0);
    let train: Vec<(u64, f32)> = history
        .iter()
        .filter_map(|p| p.train.filter(|&v| shown(v)).map(|v| (p.step, v)))
        .collect();
    let train = crate::train::smooth(&train, smoothing);
    let series = |pick: fn(&Point) -> Option<f32>| -> Vec<(u64, f32)> {
        history
            .iter()
            .filter_map(|p| pick(p).filter(|&v| shown(v)).map(|v| (p.step, v)))
            .collect()
    };
    let (val, base) = (series(|p| p.val), series(|p| p.base));
    let others: Vec<Overlay> = overlays
        .iter()
        .map(|(name, points)| {
            let kept = points.iter().copied().filter(|p| shown(p.1)).collect();
            (name.clone(), kept)
        })
        .collect();
    let last = history.last().map(|p| p.step).unwrap_or(1);
    let last = others
        .iter()
        .flat_map(|o| o.1.last())
        .fold(last, |m, p| m.max(p.0));
    let last = last.max(1);
    let all = train
        .iter()
        .chain(&val)
        .chain(&base)
        .chain(others.iter().flat_map(|o| &o.1))
        .map(|p| p.1);
    let (lo, hi) = all.fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (lo, hi) = match (lo.is_finite(), log_scale) {
        (true, true) => (lo * 0.95, hi.max(lo * 1.01) * 1.05),
        (true, false) => padded(lo, hi),
        (false, _) => (0.1, 1.0),
    };
    let marks = marks
        .iter()
        .copied()
        .filter(|&m| m > 0 && m <= last)
        .collect();
    let curves = Curves {
        last,
        marks,
        span: (lo, hi),
        train,
        val,
        base,
        others,
        r,
    };
    if log_scale {
        curves.plot(&root, "loss (log scale)", (lo..hi).log_scale())
    } else {
        curves.plot(&root, "loss", lo..hi)
    }
}

/// A linear axis over `lo..hi` with room around the curves: at least a tenth of the values'
/// size across (a first point alone gets an axis of 0.67 to 0.74, not of 0.7035 to 0.7044),
/// and 5 % more on each side, not below 0 where the values are not.
fn padded(lo: f32, hi: f32) -> (f32, f32) {
    let span = (hi - lo).max(0.1 * hi.abs().max(lo.abs())).max(1e-3);
    let mid = (lo + hi) / 2.0;
    let (from, to) = (mid - 0.55 * span, mid + 0.55 * span);
    (if lo >= 0.0 { from.max(0.0) } else { from }, to)
}

/// Colours of earlier runs' curves: apart from this run's blue and orange.
const OVERLAY_COLOURS: [RGBColor; 4] = [
    RGBColor(142, 68, 173),
    RGBColor(22, 160, 133),
    RGBColor(127, 140, 141),
    RGBColor(192, 57, 43),
];

/// The loss chart's two curves, to plot on a linear or a logarithmic axis.
struct Curves {
    last: u64,
    /// Steps marked with a dashed line, and the loss axis's range to draw it over.
    marks: Vec<u64>,
    span: (f32, f32),
    train: Vec<(u64, f32)>,
    val: Vec<(u64, f32)>,
    base: Vec<(u64, f32)>,
    others: Vec<Overlay>,
    r: Ratio,
}

impl Curves {
    fn plot<Y>(self, root: &DrawingArea<CanvasBackend, Shift>, caption: &str, y: Y) -> Option<()>
    where
        Y: AsRangedCoord<Value = f32>,
        Y::CoordDescType: ValueFormatter<f32>,
    {
        let r = self.r;
        let mut chart = ChartBuilder::on(root)
            .caption(caption, r.font(14.0))
            .margin(r.px(8.0))
            .x_label_area_size(r.px(36.0))
            .y_label_area_size(r.px(44.0))
            .build_cartesian_2d(0u64..self.last, y)
            .ok()?;
        mesh(&mut chart, r, Some("step"), 10)?;
        let blue = RGBColor(47, 111, 222);
        let orange = RGBColor(230, 126, 34);
        let (width, key) = (r.px(2.0), r.px(16.0) as i32);
        let grey = RGBColor(140, 146, 156);
        for &m in &self.marks {
            let line = [(m, self.span.0), (m, self.span.1)];
            let dashes =
                DashedLineSeries::new(line, r.px(4.0), r.px(4.0), grey.stroke_width(r.px(1.0)));
            chart.draw_series(dashes).ok()?;
        }
        chart
            .draw_series(curve(self.train, blue.stroke_width(width), r))
            .ok()?
            .label("train (smoothed)")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + key, y)], blue));
        chart
            .draw_series(curve(self.val, orange.stroke_width(width), r))
            .ok()?
            .label("validation")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + key, y)], orange));
        if !self.base.is_empty() {
            let brown = RGBColor(141, 85, 36);
            chart
                .draw_series(LineSeries::new(self.base, brown.stroke_width(width)))
                .ok()?
                .label("validation, the base's text")
                .legend(move |(x, y)| PathElement::new([(x, y), (x + key, y)], brown));
        }
        for (i, (name, points)) in self.others.into_iter().enumerate() {
            let colour = OVERLAY_COLOURS[i % OVERLAY_COLOURS.len()];
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(r.px(1.5))))
                .ok()?
                .label(format!("{name} validation"))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + key, y)], colour));
        }
        // Loss falls from the upper left: the upper right is where the curves are not.
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .legend_area_size(key + r.px(8.0) as i32)
            .label_font(r.font(11.0))
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.2))
            .draw()
            .ok()?;
        root.present().ok()
    }
}

/// A curve through `points`, with a dot where there is one point only: a line through a single
/// point draws nothing, and a chart before the first steps would look empty.
fn curve(
    points: Vec<(u64, f32)>,
    style: ShapeStyle,
    r: Ratio,
) -> LineSeries<CanvasBackend, (u64, f32)> {
    let dot = if points.len() == 1 { r.px(3.0) } else { 0 };
    LineSeries::new(points, style).point_size(dot)
}

fn draw_accuracy(history: &[Point]) -> Option<()> {
    let r = Ratio::of("acc-chart")?;
    let root = CanvasBackend::new("acc-chart")?.into_drawing_area();
    root.fill(&WHITE).ok()?;
    let acc: Vec<(u64, f32)> = history
        .iter()
        .filter_map(|p| p.acc.map(|a| (p.step, a)))
        .collect();
    let last = history.last().map(|p| p.step).unwrap_or(1).max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption("validation accuracy", r.font(14.0))
        .margin(r.px(8.0))
        .x_label_area_size(r.px(20.0))
        .y_label_area_size(r.px(44.0))
        .build_cartesian_2d(0u64..last, 0f32..1f32)
        .ok()?;
    mesh(&mut chart, r, None, 6)?;
    let green = RGBColor(39, 174, 96).stroke_width(r.px(2.0));
    chart.draw_series(curve(acc, green, r)).ok()?;
    root.present().ok()
}
