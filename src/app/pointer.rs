//! The pointer on the page's canvases: drawing on the pad, and clicks in the views that choose
//! what the others show (a test digit, a cell of the confusion matrix).

use super::client::post;
use super::dom::on;
use super::protocol::Request;
use super::{dom, pad, views, with};
use wasm_bindgen::JsCast;

/// Wires the pad: strokes drawn as the pointer moves, Clear.
pub fn wire_pad() {
    pad::clear_pad();
    on("pad-clear", "click", |_| {
        pad::clear_pad();
        dom::set_text("pad-guess", pad::PAD_PROMPT);
        // The feature maps go back to the chosen test digit.
        with(|s| {
            s.drawn = false;
            s.pad_maps.clear();
        });
        post(Request::Pad(None));
    });
    // The last point of the stroke being drawn, in the pad's pixels.
    let last = std::rc::Rc::new(std::cell::Cell::new(None::<(f64, f64)>));
    let l = last.clone();
    on("pad", "pointerdown", move |e| {
        // The pen keeps drawing on the pad when it strays over its edge.
        if let (Some(pad), Some(p)) = (
            dom::by_id::<web_sys::Element>("pad"),
            e.dyn_ref::<web_sys::PointerEvent>(),
        ) {
            let _ = pad.set_pointer_capture(p.pointer_id());
        }
        let at = pad_point(&e);
        if let Some(p) = at {
            pad::stroke(p, p);
        }
        l.set(at);
    });
    for end in ["pointerup", "pointercancel"] {
        let l = last.clone();
        on("pad", end, move |_| {
            if l.take().is_some() {
                super::pad_changed();
            }
        });
    }
    on("pad", "pointermove", move |e| {
        let (Some(from), Some(to)) = (last.get(), pad_point(&e)) else {
            return;
        };
        pad::stroke(from, to);
        last.set(Some(to));
        super::pad_changed();
    });
}

/// Where a pointer event is on the pad, in the pad's pixels.
fn pad_point(e: &web_sys::Event) -> Option<(f64, f64)> {
    let e = e.dyn_ref::<web_sys::PointerEvent>()?;
    let canvas: web_sys::HtmlCanvasElement = dom::by_id("pad")?;
    let rect = canvas.get_bounding_client_rect();
    let scale = canvas.width() as f64 / rect.width();
    Some((
        (e.client_x() as f64 - rect.left()) * scale,
        (e.client_y() as f64 - rect.top()) * scale,
    ))
}

/// Where a click is on the canvas `id`, in CSS pixels from its top left.
fn click_point(e: &web_sys::Event, id: &str) -> Option<(f64, f64)> {
    let e = e.dyn_ref::<web_sys::MouseEvent>()?;
    let canvas: web_sys::HtmlCanvasElement = dom::by_id(id)?;
    let rect = canvas.get_bounding_client_rect();
    let css_width: f64 = canvas.get_attribute("data-css-width")?.parse().ok()?;
    let scale = css_width / rect.width();
    Some((
        (e.client_x() as f64 - rect.left()) * scale,
        (e.client_y() as f64 - rect.top()) * scale,
    ))
}

/// Clicks in the views choose what the others show: a digit for the feature maps, a cell of
/// the confusion matrix for its digits; the views' options redraw them.
pub fn wire_views() {
    let choose_digit = |slot_to_digit: fn(usize) -> Option<usize>, id: &'static str| {
        on(id, "click", move |e| {
            let Some((x, y)) = click_point(&e, id) else {
                return;
            };
            let slot = (y / views::ROW) as usize * views::PER_ROW + (x / views::CELL) as usize;
            if let Some(digit) = slot_to_digit(slot) {
                with(|s| {
                    s.selected_digit = Some(digit);
                    s.drawn = false;
                });
                super::choose();
            }
        });
    };
    choose_digit(
        |slot| (slot < views::GRID_DIGITS).then_some(slot),
        "digit-grid",
    );
    choose_digit(
        |slot| with(|s| s.cell_digits.get(slot).copied()),
        "mistake-grid",
    );
    on("confusion", "click", |e| {
        let Some((x, y)) = click_point(&e, "confusion") else {
            return;
        };
        let (x0, y0) = views::MATRIX_AT;
        let (p, t) = ((x - x0) / views::MATRIX_CELL, (y - y0) / views::MATRIX_CELL);
        if (0.0..10.0).contains(&p) && (0.0..10.0).contains(&t) {
            with(|s| s.chosen_cell = Some((t as usize, p as usize)));
            super::choose();
        }
    });
    on("runs", "change", |_| {
        let chosen = super::runs::checked();
        with(|s| {
            s.overlays = super::runs::overlays(&chosen);
            s.dirty = true;
        });
    });
    // These options redraw what the page has; a new prompt is read by the model again.
    for id in ["show-train", "show-test", "attn-layer", "attn-head"] {
        on(id, "change", |_| super::redraw::views());
    }
    on("prompt", "input", |_| super::choose());
    // Training's own samples are drawn as these say.
    for id in ["temperature", "top-k"] {
        on(id, "change", |_| super::choose());
    }
}
