//! Inside the GPT: a head's attention weights over the prompt, and sampled characters shaded
//! by the probability the model gave them.

use super::dom::{by_id, document, set_text, sharp, value};
use super::protocol::SampleStart;
use super::shared::with;
use crate::train::{Inside, Sampled};
use web_sys::HtmlSelectElement;

/// The largest side of a cell of the attention map (a short prompt would fill the canvas).
const MAX_CELL: f64 = 40.0;

/// Fills the layer and head choices for a model of `layers` and `heads`, keeping the current
/// choice where it still exists.
pub fn offer_choices(layers: usize, heads: usize) {
    for (id, count) in [("attn-layer", layers), ("attn-head", heads)] {
        let Some(select) = by_id::<HtmlSelectElement>(id) else {
            continue;
        };
        let kept = select.value();
        select.set_inner_html("");
        for i in 1..=count {
            if let Ok(option) = document().create_element("option") {
                option.set_text_content(Some(&i.to_string()));
                let _ = select.append_child(&option);
            }
        }
        if kept
            .parse::<usize>()
            .is_ok_and(|k| (1..=count).contains(&k))
        {
            select.set_value(&kept);
        }
    }
}

/// Draws the chosen layer's and head's weights ([heads, T, T] per layer) with the prompt's
/// tokens along both sides.
pub fn draw_attention(layers: &[Inside], labels: &[String]) {
    let Some((ctx, w, _)) = sharp("attention") else {
        return;
    };
    let pick = |id: &str| value(id).parse::<usize>().unwrap_or(1).max(1) - 1;
    let Some(layer) = layers.get(pick("attn-layer")) else {
        return;
    };
    let (heads, t) = (layer.shape[0], layer.shape[1]);
    let head = pick("attn-head").min(heads - 1);
    let weights = &layer.values[head * t * t..(head + 1) * t * t];
    let shown = &labels[labels.len().saturating_sub(t)..];
    let margin = 16.0;
    let cell = ((w - margin) / t as f64).min(MAX_CELL);
    for i in 0..t {
        for j in 0..=i {
            let v = weights[i * t + j].clamp(0.0, 1.0).sqrt() as f64;
            let shade = |full: f64| (255.0 - (255.0 - full) * v) as u8;
            ctx.set_fill_style_str(&format!(
                "rgb({},{},{})",
                shade(31.0),
                shade(79.0),
                shade(181.0)
            ));
            ctx.fill_rect(
                margin + j as f64 * cell,
                margin + i as f64 * cell,
                cell - 0.5,
                cell - 0.5,
            );
        }
    }
    // Labels only where cells leave room for legible ones (11 px at least).
    if cell >= 14.0 {
        ctx.set_fill_style_str("#1c1f24");
        ctx.set_font(&format!(
            "{}px monospace",
            (cell * 0.8).clamp(11.0, 12.0) as u32
        ));
        ctx.set_text_align("center");
        // As many characters of a token as its cell holds (GPT-2's tokens are word pieces).
        let fits = ((cell / 7.0) as usize).max(1);
        for (k, token) in shown.iter().enumerate() {
            let label: String = visible(token).chars().take(fits).collect();
            let mid = margin + (k as f64 + 0.5) * cell;
            let _ = ctx.fill_text(&label, mid, margin - 4.0);
            // The left margin holds one character.
            let first: String = label.chars().take(1).collect();
            let _ = ctx.fill_text(&first, margin / 2.0, mid + 4.0);
        }
        ctx.set_text_align("left");
    }
}

/// A token's text as it can be shown as a label: spaces and line breaks made visible.
fn visible(token: &str) -> String {
    token.replace(' ', "·").replace('\n', "↵")
}

/// Samples kept: the newest at the bottom, the oldest dropped.
const SAMPLES_KEPT: usize = 30;

/// Starts a new sample at the bottom of the sample box, headed by the step of the model that
/// writes it, with its prompt; the oldest beyond SAMPLES_KEPT goes. Nothing on screen moves:
/// a sample grows below the others, the box scrolls to it, and the browser's scroll anchoring
/// keeps the shown samples in place when the oldest leaves.
pub fn start_sample(start: &SampleStart) {
    let Some(out) = document().get_element_by_id("sample-out") else {
        return;
    };
    let Ok(block) = document().create_element("p") else {
        return;
    };
    block.set_class_name("sample");
    let by = if start.automatic { "" } else { " (Sample)" };
    append_span(&block, "at", &format!("step {}{by}", start.step));
    append_span(&block, "", &start.prompt);
    let _ = out.append_child(&block);
    while out.child_element_count() as usize > SAMPLES_KEPT {
        if let Some(first) = out.first_element_child() {
            first.remove();
        }
    }
    out.set_scroll_top(out.scroll_height());
    with(|s| s.status.sampling = Some((0, start.chars)));
    show_progress();
}

/// Appends a span of `class` ("": none) holding `text` to `parent`, and returns it.
fn append_span(parent: &web_sys::Element, class: &str, text: &str) -> Option<web_sys::Element> {
    let span = document().create_element("span").ok()?;
    span.set_class_name(class);
    span.set_text_content(Some(text));
    parent.append_child(&span).ok()?;
    Some(span)
}

/// How near the bottom, in CSS pixels, the sample box counts as following the newest sample.
const FOLLOW_SLACK_PX: i32 = 24;

/// Adds sampled characters to the newest sample, each shaded by its probability (strong: the
/// model was sure).
pub fn add_sampled(sampled: &[Sampled]) {
    let Some(out) = document().get_element_by_id("sample-out") else {
        return;
    };
    let Some(block) = out.last_element_child() else {
        return;
    };
    // Following the sample unless the reader scrolled up to an older one.
    let following = out.scroll_top() + out.client_height() + FOLLOW_SLACK_PX >= out.scroll_height();
    for s in sampled {
        let Some(span) = append_span(&block, "c", &s.text) else {
            return;
        };
        let alpha = 0.05 + 0.55 * s.probability.clamp(0.0, 1.0);
        let _ = span.set_attribute("style", &format!("background: rgba(47,111,222,{alpha:.2})"));
        let _ = span.set_attribute("title", &format!("{:.0}%", 100.0 * s.probability));
    }
    if following {
        out.set_scroll_top(out.scroll_height());
    }
    with(|s| {
        if let Some((made, _)) = s.status.sampling.as_mut() {
            *made += sampled.len();
        }
    });
    show_progress();
}

/// "42 / 300" beside Sample while a sample is written.
pub fn show_progress() {
    let shown = with(|s| match s.status.sampling {
        Some((made, of)) if made < of => format!("{made} / {of}"),
        _ => String::new(),
    });
    set_text("sample-progress", &shown);
}
