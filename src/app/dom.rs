//! Small helpers over web-sys: find elements, read and write controls, draw pixels.

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    CanvasRenderingContext2d, Document, HtmlCanvasElement, HtmlInputElement, HtmlSelectElement,
};

pub fn document() -> Document {
    web_sys::window()
        .and_then(|w| w.document())
        .expect("a page has a document")
}

pub fn by_id<T: JsCast>(id: &str) -> Option<T> {
    document()
        .get_element_by_id(id)
        .and_then(|e| e.dyn_into::<T>().ok())
}

/// The elements that match a CSS selector, in document order.
pub fn all(selector: &str) -> Vec<web_sys::Element> {
    let Ok(list) = document().query_selector_all(selector) else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|n| n.dyn_into().ok())
        .collect()
}

/// Calls `f` at each `event` of the element `id`.
pub fn on(id: &str, event: &str, f: impl FnMut(web_sys::Event) + 'static) {
    let Some(el) = document().get_element_by_id(id) else {
        return;
    };
    let closure = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::Event)>::new(f);
    let _ = el.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref());
    closure.forget();
}

pub fn set_text(id: &str, text: &str) {
    if let Some(el) = document().get_element_by_id(id) {
        el.set_text_content(Some(text));
    }
}

pub fn set_hidden(id: &str, hidden: bool) {
    if let Some(el) = by_id::<web_sys::HtmlElement>(id) {
        el.set_hidden(hidden);
    }
}

/// The value of an input or select.
pub fn value(id: &str) -> String {
    if let Some(i) = by_id::<HtmlInputElement>(id) {
        return i.value();
    }
    if let Some(s) = by_id::<HtmlSelectElement>(id) {
        return s.value();
    }
    if let Some(t) = by_id::<web_sys::HtmlTextAreaElement>(id) {
        return t.value();
    }
    String::new()
}

pub fn set_value(id: &str, v: &str) {
    if let Some(i) = by_id::<HtmlInputElement>(id) {
        i.set_value(v);
    } else if let Some(s) = by_id::<HtmlSelectElement>(id) {
        s.set_value(v);
    }
}

pub fn checked(id: &str) -> bool {
    by_id::<HtmlInputElement>(id)
        .map(|i| i.checked())
        .unwrap_or(false)
}

/// Marks a control invalid with a sentence right after it, or clears that.
pub fn mark(id: &str, problem: Option<&str>) {
    let Some(input) = document().get_element_by_id(id) else {
        return;
    };
    if problem.is_some() {
        let _ = input.class_list().add_1("invalid");
        let _ = input.set_attribute("aria-invalid", "true");
    } else {
        let _ = input.class_list().remove_1("invalid");
        let _ = input.remove_attribute("aria-invalid");
    }
    sentence_after(&input, "hint", problem);
}

/// The settings controls marked invalid (`mark`), in page order: each one's id and the words
/// of its label.
pub fn invalid_settings() -> Vec<(String, String)> {
    // The settings bar's, folded or not, and the shown task's own (its model's settings sit
    // on the stage; another task's, hidden, are not this run's).
    all("#settings .invalid, #stage .invalid")
        .into_iter()
        .filter(|c| {
            c.closest("#settings").ok().flatten().is_some()
                || c.get_bounding_client_rect().width() > 0.0
        })
        .map(|control| (control.id(), label_words(&control)))
        .collect()
}

/// The words of a control's label before the control (its id where it has none).
fn label_words(control: &web_sys::Element) -> String {
    let label = control.parent_element().filter(|p| p.tag_name() == "LABEL");
    label
        .and_then(|l| l.first_child())
        .and_then(|words| words.text_content())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| control.id())
}

/// Opens the settings and brings a control into view, focused: on a phone they start folded,
/// far below the sentence that sends the user there.
pub fn reveal_setting(id: &str) {
    if let Some(settings) = by_id::<web_sys::HtmlDetailsElement>("settings") {
        settings.set_open(true);
    }
    if let Some(control) = by_id::<web_sys::HtmlElement>(id) {
        // Centred, so that its label and the notes around it show too.
        let centred = web_sys::ScrollIntoViewOptions::new();
        centred.set_block(web_sys::ScrollLogicalPosition::Center);
        control.scroll_into_view_with_scroll_into_view_options(&centred);
        let _ = control.focus();
    }
}

/// A sentence after a control that its own checks leave alone, such as why it does not show
/// what the page's link asked for; None removes it.
pub fn note_beside(id: &str, note: Option<&str>) {
    if let Some(input) = document().get_element_by_id(id) {
        sentence_after(&input, "link-hint", note);
    }
}

/// Shows `text` in a paragraph after `input`'s label, one per `kind`, or removes it.
fn sentence_after(input: &web_sys::Element, kind: &str, text: Option<&str>) {
    let doc = document();
    let hint_id = format!("{}-{kind}", input.id());
    let existing = doc.get_element_by_id(&hint_id);
    let Some(text) = text else {
        if let Some(h) = existing {
            h.remove();
        }
        return;
    };
    let hint = existing.unwrap_or_else(|| {
        let p = doc.create_element("p").expect("create p");
        p.set_id(&hint_id);
        p.set_class_name("hint");
        let _ = p.set_attribute("role", "alert");
        if let Some(label) = input.parent_element() {
            let _ = label.after_with_node_1(&p);
        }
        p
    });
    hint.set_text_content(Some(text));
}

pub fn context(id: &str) -> Option<(HtmlCanvasElement, CanvasRenderingContext2d)> {
    let canvas: HtmlCanvasElement = by_id(id)?;
    let ctx = canvas
        .get_context("2d")
        .ok()??
        .dyn_into::<CanvasRenderingContext2d>()
        .ok()?;
    Some((canvas, ctx))
}

/// Puts RGBA pixels of a w × h image on a canvas, scaled to `size` at (x, y) (smoothed or
/// not as the context's image smoothing is set).
pub fn put_image(
    ctx: &CanvasRenderingContext2d,
    rgba: &mut [u8],
    w: u32,
    h: u32,
    x: f64,
    y: f64,
    size: (f64, f64),
) {
    let clamped = wasm_bindgen::Clamped(&rgba[..]);
    let Ok(image) = web_sys::ImageData::new_with_u8_clamped_array_and_sh(clamped, w, h) else {
        return;
    };
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(tmp) = doc.create_element("canvas") else {
        return;
    };
    let tmp: HtmlCanvasElement = tmp.unchecked_into();
    tmp.set_width(w);
    tmp.set_height(h);
    if let Some(tctx) = tmp
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
    {
        let _ = tctx.put_image_data(&image, 0.0, 0.0);
        let _ = ctx.draw_image_with_html_canvas_element_and_dw_and_dh(&tmp, x, y, size.0, size.1);
    }
}

pub fn js_error(e: JsValue) -> String {
    e.as_string().unwrap_or_else(|| format!("{e:?}"))
}

/// The device pixels per CSS pixel of this screen (2 or 3 on phones and high-DPI laptops).
pub fn pixel_ratio() -> f64 {
    web_sys::window()
        .map_or(1.0, |w| w.device_pixel_ratio())
        .max(1.0)
}

/// Sizes the canvas `id`'s backing store for this screen, the first time: `pixel_ratio`
/// times its size in the HTML, which stays its CSS size. Returns the canvas, its context (with
/// no transform) and the ratio of backing pixels to CSS pixels.
pub fn hidpi(id: &str) -> Option<(HtmlCanvasElement, CanvasRenderingContext2d, f64)> {
    let (canvas, ctx) = context(id)?;
    if canvas.get_attribute("data-css-width").is_none() {
        let (w, h, ratio) = (canvas.width(), canvas.height(), pixel_ratio());
        let _ = canvas.set_attribute("data-css-width", &w.to_string());
        let _ = canvas.style().set_property("width", &format!("{w}px"));
        canvas.set_width((w as f64 * ratio).round() as u32);
        canvas.set_height((h as f64 * ratio).round() as u32);
    }
    let css_width: f64 = canvas.get_attribute("data-css-width")?.parse().ok()?;
    let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    let ratio = canvas.width() as f64 / css_width;
    Some((canvas, ctx, ratio))
}

/// The canvas `id` ready to draw sharp on this screen (see `hidpi`), cleared, its context
/// scaled so that drawing is in CSS pixels. Returns the context and the CSS width and height.
pub fn sharp(id: &str) -> Option<(CanvasRenderingContext2d, f64, f64)> {
    let (canvas, ctx, ratio) = hidpi(id)?;
    let _ = ctx.set_transform(ratio, 0.0, 0.0, ratio, 0.0, 0.0);
    let (w, h) = (
        canvas.width() as f64 / ratio,
        canvas.height() as f64 / ratio,
    );
    ctx.set_fill_style_str("#ffffff");
    ctx.fill_rect(0.0, 0.0, w, h);
    Some((ctx, w, h))
}

/// A colour for a value in [-1, 1]: orange for negative, white at 0, blue for positive (the
/// colours of the two classes of the 2-D sets).
pub fn diverging(v: f32) -> [u8; 3] {
    let v = v.clamp(-1.0, 1.0);
    let (end, t) = if v < 0.0 {
        ([230.0, 126.0, 34.0], -v)
    } else {
        ([47.0, 111.0, 222.0], v)
    };
    let mix = |e: f32| (255.0 + (e - 255.0) * t) as u8;
    [mix(end[0]), mix(end[1]), mix(end[2])]
}

/// `rgb(r,g,b)` for a canvas style.
pub fn css_rgb([r, g, b]: [u8; 3]) -> String {
    format!("rgb({r},{g},{b})")
}

/// The page's query string (`?…`), empty when there is none.
pub fn search() -> String {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default()
}
