//! The MLP as a network diagram, as TensorFlow Playground draws it: a column per layer, each
//! neuron a small heatmap of its output over the input plane, and the weights between them as
//! lines coloured by sign and thickened by size.

use super::dom::{css_rgb, diverging, put_image, sharp};
use super::grid::NEURON_GRID;
use crate::train::Inside;

/// Neurons drawn per layer; the rest are counted ("+24").
const SHOWN: usize = 6;
const ID: &str = "network";

/// One column of the diagram: the heatmaps of its shown neurons and how many it has.
struct Column {
    name: String,
    maps: Vec<Vec<f32>>,
    total: usize,
}

/// Draws the diagram from the insides on the neuron grid (each "hidden N" [G², width], then
/// "output" [G², 2]) and the weights of each layer ([outputs, inputs], in order).
pub fn draw(insides: &[Inside], weights: &[Inside]) {
    let Some((ctx, w, h)) = sharp(ID) else {
        return;
    };
    let columns = columns(insides);
    let n = columns.len();
    let top = 18.0;
    let side = ((h - top - 16.0) / SHOWN as f64 - 6.0).min(30.0);
    // Room on the left for the inputs' names.
    let x_of = |c: usize| 20.0 + (w - side - 28.0) * c as f64 / (n - 1).max(1) as f64;
    let y_of = |k: usize, shown: usize| {
        top + (h - top - 16.0) / 2.0 + (k as f64 - shown as f64 / 2.0) * (side + 6.0)
    };
    // Weights under the neurons: layer c joins column c to column c + 1.
    for (c, weight) in weights.iter().enumerate().take(n - 1) {
        let (ins, outs) = (columns[c].maps.len(), columns[c + 1].maps.len());
        let max = (0..outs)
            .flat_map(|o| (0..ins).map(move |i| (o, i)))
            .fold(1e-6f32, |m, (o, i)| {
                m.max(line_weight(weight, o, i, c + 2 == n).abs())
            });
        for o in 0..outs {
            for i in 0..ins {
                let v = line_weight(weight, o, i, c + 2 == n) / max;
                ctx.set_stroke_style_str(&css_rgb(diverging(v.signum() * (0.35 + 0.65 * v.abs()))));
                ctx.set_line_width(0.5 + 3.0 * v.abs() as f64);
                ctx.begin_path();
                ctx.move_to(x_of(c) + side, y_of(i, ins) + side / 2.0);
                ctx.line_to(x_of(c + 1), y_of(o, outs) + side / 2.0);
                ctx.stroke();
            }
        }
    }
    ctx.set_image_smoothing_enabled(true);
    ctx.set_font("11px sans-serif");
    for (c, col) in columns.iter().enumerate() {
        ctx.set_fill_style_str("#5a6270");
        let _ = ctx.fill_text(&col.name, x_of(c), 12.0);
        for (k, map) in col.maps.iter().enumerate() {
            let mut rgba = heatmap(map);
            let g = NEURON_GRID as u32;
            put_image(
                &ctx,
                &mut rgba,
                g,
                g,
                x_of(c),
                y_of(k, col.maps.len()),
                (side, side),
            );
            // A thin frame, so that a neuron pale all over still shows where it is and the
            // weights' lines end at something.
            ctx.set_stroke_style_str("#b8bec8");
            ctx.set_line_width(1.0);
            ctx.stroke_rect(x_of(c), y_of(k, col.maps.len()), side, side);
        }
        if c == 0 {
            // The two inputs are the point's coordinates.
            for (k, name) in ["x", "y"].iter().enumerate() {
                let y = y_of(k, col.maps.len()) + side / 2.0 + 4.0;
                let _ = ctx.fill_text(name, 6.0, y);
            }
        }
        if col.total > col.maps.len() {
            let y = y_of(col.maps.len(), col.maps.len()) + 10.0;
            let more = format!("+{} more", col.total - col.maps.len());
            let _ = ctx.fill_text(&more, x_of(c), y);
        }
    }
}

/// The weight drawn from neuron `i` to neuron `o`. The output node shows P(class 1), which
/// rises with the difference of the two classes' logits: its lines show that difference.
fn line_weight(weight: &Inside, o: usize, i: usize, into_output: bool) -> f32 {
    let (outputs, fan_in) = (weight.shape[0], weight.shape[1]);
    if into_output && outputs == 2 {
        weight.values[fan_in + i] - weight.values[i]
    } else {
        weight.values[o * fan_in + i]
    }
}

/// The input column (x and y over the plane), each hidden layer, and the output (P(blue)).
fn columns(insides: &[Inside]) -> Vec<Column> {
    let g = NEURON_GRID;
    let coordinate = |axis: usize| -> Vec<f32> {
        (0..g * g)
            .map(|p| {
                let (r, c) = (p / g, p % g);
                let t = if axis == 0 { c } else { g - 1 - r };
                2.0 * t as f32 / (g - 1) as f32 - 1.0
            })
            .collect()
    };
    let mut out = vec![Column {
        name: "input".into(),
        maps: vec![coordinate(0), coordinate(1)],
        total: 2,
    }];
    for inside in insides {
        let width = inside.shape[1];
        let maps = if inside.name == "output" {
            vec![neuron(inside, 1).iter().map(|p| 2.0 * p - 1.0).collect()]
        } else {
            (0..width.min(SHOWN))
                .map(|j| normalised(neuron(inside, j)))
                .collect()
        };
        let total = if inside.name == "output" { 1 } else { width };
        out.push(Column {
            name: parameter_name(&inside.name, insides.len()),
            maps,
            total,
        });
    }
    out
}

/// A layer named as its parameters are (`layers.0` …), as the histograms and the gradient
/// flow name it: "hidden N" is `layers.{N-1}`, the output the last.
fn parameter_name(inside: &str, layers: usize) -> String {
    match inside
        .strip_prefix("hidden ")
        .and_then(|n| n.parse::<usize>().ok())
    {
        Some(n) => format!("layers.{}", n - 1),
        None => format!("layers.{} (out)", layers - 1),
    }
}

/// Neuron `j`'s output at every grid point.
fn neuron(inside: &Inside, j: usize) -> Vec<f32> {
    let width = inside.shape[1];
    inside.values.chunks(width).map(|row| row[j]).collect()
}

/// Values scaled into [-1, 1] by their largest magnitude.
fn normalised(v: Vec<f32>) -> Vec<f32> {
    let max = v.iter().fold(1e-6f32, |m, x| m.max(x.abs()));
    v.into_iter().map(|x| x / max).collect()
}

fn heatmap(values: &[f32]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| {
            let [r, g, b] = diverging(v);
            [r, g, b, 255]
        })
        .collect()
}
