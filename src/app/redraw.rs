//! Draws the latest views the worker reported: at once when they come, and again from the
//! page's copy when a view's option changes (points shown, attention layer and head).

use super::protocol::{DigitViews, Views};
use super::shared::with;
use super::{cnn_views, dom, network, text_views, views};

/// Every view of the latest report.
pub fn views() {
    let Some(latest) = with(|s| s.views.take()) else {
        return;
    };
    match &latest {
        Views::Plane {
            probs,
            neurons,
            weights,
        } => {
            // While the replay shows an earlier step, the boundary stays on it.
            if !with(|s| s.frames.replaying()) {
                boundary(probs);
            }
            network::draw(neurons, weights);
        }
        Views::Digits(d) => digits(d),
        Views::Attention { layers, labels } => {
            if layers.is_empty() {
                // Nothing to attend over: an empty map.
                let _ = dom::sharp("attention");
            } else {
                text_views::draw_attention(layers, labels);
            }
        }
    }
    with(|s| s.views = Some(latest));
}

/// The digit grid, the confusion matrix and the chosen cell's digits, then (for a CNN) its
/// filters and its feature maps.
fn digits(d: &DigitViews) {
    let (selected, chosen, step, replaying) = with(|s| {
        (
            s.selected_digit,
            s.chosen_cell,
            s.views_step,
            s.frames.replaying(),
        )
    });
    if !replaying {
        views::draw_digits("digit-grid", &d.grid, selected);
    }
    views::draw_confusion(&d.counts, d.classes, chosen, step);
    let cell_digits = d
        .cell
        .as_ref()
        .map(|c| c.tiles.iter().map(|t| t.index).collect())
        .unwrap_or_default();
    with(|s| s.cell_digits = cell_digits);
    dom::set_hidden("mistakes", d.cell.is_none());
    if let Some(cell) = &d.cell {
        let ((t, p), n) = (cell.at, cell.count);
        views::draw_digits("mistake-grid", &cell.tiles, selected);
        dom::set_hidden("mistake-grid", n == 0);
        let shown = cell.tiles.len();
        let caption = if n == 0 {
            format!("No test digit {t} was read as {p}.")
        } else if t == p {
            format!("Test digits {t} the model read right: {shown} of {n} shown. Click one to look inside.")
        } else {
            format!("Test digits {t} the model read as {p}: {shown} of {n} shown. Click one to look inside.")
        };
        dom::set_text("mistakes-caption", &caption);
    }
    if let Some(filters) = &d.filters {
        cnn_views::draw_filters(filters);
    }
    if let Some((maps, which)) = &d.maps {
        if !with(|s| s.drawn) {
            cnn_views::draw_maps(maps, which);
        }
    }
}

/// The decision boundary of `probs` with the run's points the options ask for.
pub fn boundary(probs: &[f32]) {
    let show = (dom::checked("show-train"), dom::checked("show-test"));
    with(|s| {
        if let Some(points) = &s.points {
            views::draw_boundary(probs, points, show);
        }
    });
}

/// The feature maps of the pad's drawing, while the views show it.
pub fn maps() {
    with(|s| {
        if s.drawn && !s.pad_maps.is_empty() {
            cnn_views::draw_maps(&s.pad_maps, "your drawing");
        }
    });
}
