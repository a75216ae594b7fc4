//! A new session as the page shows it: the model's summary, its size and, for the 2-D tasks,
//! the points of the plane.

use crate::app::protocol::{Built, Points};
use crate::data::Split;
use crate::train::{ModelConfig, Session};

/// A new session as the page shows it.
pub(super) fn built(session: &Session, note: Option<String>) -> Built {
    let attention = match &session.config.model {
        ModelConfig::Gpt(g) => Some((g.layers, g.heads)),
        _ => None,
    };
    let points = session
        .labelled()
        .filter(|d| d.classes == 2)
        .map(|d| Points {
            train: plane_points(&d.train),
            test: plane_points(&d.val),
        });
    Built {
        task: session.config.task,
        summary: summary_rows(session),
        parameters: session.parameter_count(),
        attention,
        points,
        eval_every: session.config.eval_every,
        items_per_step: session.items_per_step(),
        note,
        backend: None,
        precision: match session.device() {
            crate::Device::Gpu(gpu) => gpu.precision(),
            crate::Device::Cpu => None,
        },
        steps: session.config.steps,
        lora: None,
    }
}

fn plane_points(split: &Split) -> Vec<(f32, f32, u32)> {
    (0..split.len())
        .map(|i| (split.x[2 * i], split.x[2 * i + 1], split.y[i]))
        .collect()
}

/// The model summary's rows: each layer with its parameters' shapes and their count.
fn summary_rows(session: &Session) -> Vec<(String, Vec<String>, usize)> {
    let mut rows: Vec<(String, Vec<String>, usize)> = Vec::new();
    for (name, p) in session.parameters() {
        let (layer, kind) = name.rsplit_once('.').unwrap_or((name.as_str(), ""));
        let dims: Vec<String> = p.shape().iter().map(|d| d.to_string()).collect();
        let shape = format!("{kind} {}", dims.join(" × "));
        match rows.last_mut().filter(|r| r.0 == layer) {
            Some(row) => {
                row.1.push(shape);
                row.2 += p.numel();
            }
            None => rows.push((layer.to_string(), vec![shape], p.numel())),
        }
    }
    rows
}
