//! `window.webgrad`, the scripting API for automation and tests, and the wiring of the page's
//! buttons, keys, file input and drawing pad.

use super::client::post;
use super::dom::on;

use super::protocol::{Bytes, Request, Saving};
use super::{dom, schema, settings, with};
use crate::train::Task;
use strum::VariantNames;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

pub(super) fn set_running(on: bool) {
    if on && refused_for_settings() {
        return;
    }
    super::set_running(on);
    show_running(on);
    if on {
        // Pressed once, the hint has done its job.
        dom::set_hidden("hint", true);
    } else {
        with(|s| super::runs::keep(&s.run));
    }
}

/// Whether invalid settings left no run to train or step: the first invalid control is then
/// brought into view instead.
fn refused_for_settings() -> bool {
    if !super::settings_invalid() {
        return false;
    }
    if let Some((id, _)) = dom::invalid_settings().first() {
        dom::reveal_setting(id);
    }
    true
}

/// Takes one step, unless invalid settings left no run.
fn step() {
    if !refused_for_settings() {
        post(Request::Step);
    }
}

/// The Train button reads Pause while training.
pub fn show_running(on: bool) {
    dom::set_text("train", if on { "Pause" } else { "Train" });
}

fn set_task(name: &str) -> Result<(), JsValue> {
    let task: Task = name.parse().map_err(|_| {
        JsValue::from_str(&format!(
            "unknown task {name:?}; choose one of {}",
            Task::VARIANTS.join(", ")
        ))
    })?;
    // The task being left is the one the page shows, not the control's (already the new one).
    super::edits::leave(with(|s| s.status.task));
    super::select_task(task);
    super::edits::restore(task);
    // A task chosen replaces the user's own points and whatever the link asked for.
    with(|s| s.own_points = None);
    dom::set_hidden("points-builtin", true);
    dom::note_beside("task", None);
    // Until the new model's first evaluation, neither state() nor the page may show the old
    // model's figures: a script waiting for step 0 with a validation loss would read stale
    // ones, and a person would see the old task's curves beside the new task's controls.
    with(|s| {
        s.status.step = 0;
        s.status.train_loss = None;
        s.status.val_loss = None;
        s.status.val_acc = None;
        s.status.val_step = None;
        s.history.clear();
    });
    dom::set_text("stats", "");
    clear_views();
    super::show_note(Some(format!("Preparing the {task} task…")));
    with(|s| s.dirty = true);
    super::reset();
    Ok(())
}

/// Blanks what showed the run being replaced (its charts, its views), so that nothing of it
/// stays beside the new task's controls while the new run is prepared.
fn clear_views() {
    const VIEWS: [&str; 14] = [
        "data-plot",
        "network",
        "boundary",
        "digit-grid",
        "filters",
        "feature-maps",
        "confusion",
        "pad-probs",
        "pad-input",
        "attention",
        "weights",
        "flow-chart",
        "acc-chart",
        "mistake-grid",
    ];
    for id in VIEWS {
        let _ = dom::sharp(id);
    }
    with(|s| {
        s.flows.clear();
        s.frames.clear();
        s.views = None;
    });
    with(|s| s.status.sampling = None);
    for id in [
        "flow-note",
        "digit-accuracy",
        "maps-caption",
        "sample-out",
        "sample-progress",
        "model-summary",
    ] {
        dom::set_text(id, "");
    }
    super::replay::show_slider();
}

fn object_fn(
    target: &js_sys::Object,
    name: &str,
    f: Closure<dyn Fn(JsValue) -> Result<JsValue, JsValue>>,
) {
    let _ = js_sys::Reflect::set(target, &JsValue::from_str(name), f.as_ref());
    f.forget();
}

/// A method of `window.webgrad` that does `act` and returns nothing.
fn action(api: &js_sys::Object, name: &str, act: fn()) {
    object_fn(
        api,
        name,
        Closure::new(move |_| {
            act();
            Ok(JsValue::UNDEFINED)
        }),
    );
}

/// A method of `window.webgrad` that returns what `read` gives, as a JavaScript object.
fn getter<T: serde::Serialize + 'static>(api: &js_sys::Object, name: &str, read: fn() -> T) {
    object_fn(
        api,
        name,
        Closure::new(move |_| {
            serde_wasm_bindgen::to_value(&read()).map_err(|e| JsValue::from_str(&e.to_string()))
        }),
    );
}

/// Installs `window.webgrad` = { state, setTask, train, pause, step, reset, loseDevice, bench }.
pub fn install() {
    let api = js_sys::Object::new();
    getter(&api, "state", || with(|s| s.status.clone()));
    object_fn(
        &api,
        "setTask",
        Closure::new(|name: JsValue| {
            set_task(&name.as_string().unwrap_or_default())?;
            Ok(JsValue::UNDEFINED)
        }),
    );
    action(&api, "train", || set_running(true));
    action(&api, "pause", || set_running(false));
    action(&api, "step", step);
    action(&api, "reset", super::reset);
    action(&api, "loseDevice", || post(Request::LoseDevice));
    getter(&api, "bench", super::bench::state);
    if let Some(w) = web_sys::window() {
        let _ = js_sys::Reflect::set(&w, &JsValue::from_str("webgrad"), &api);
    }
}

/// The settings in the URL, so that a link reproduces the run.
pub fn update_url() {
    let query = settings::to_query();
    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&format!("?{query}")));
    }
}

pub fn wire_controls() {
    on("train", "click", |_| {
        set_running(!with(|s| s.status.running))
    });
    on("step", "click", |_| step());
    on("reset", "click", |_| super::reset());
    on("task", "change", |_| {
        let _ = set_task(&dom::value("task"));
    });
    // A size fills the GPT's controls with its preset; auto waits for Reset to measure.
    on("gpt-size", "change", |_| {
        if let Some(preset) = schema::selected_preset(&settings::from_page()) {
            settings::show_preset(preset);
        }
    });
    for id in schema::CONTROLS.iter().skip(1) {
        on(id, "change", |_| {
            dom::note_beside(id, None);
            // Check now (a sentence beside anything invalid); the run changes on Reset.
            let mut form = settings::from_page();
            let valid = schema::read(&mut form, settings::selected_task(), 1, usize::MAX);
            settings::show_marks(&form.marks);
            if valid.is_some() {
                update_url();
                // No run could be built from the settings before: build one now that they
                // are valid (there is nothing of the user's to lose).
                let unbuilt = super::settings_invalid();
                super::clear_settings_invalid();
                if unbuilt {
                    super::reset();
                } else {
                    super::edits::changed(id);
                }
            }
        });
    }
    on("sample", "click", |_| super::sample());
    on("speed", "change", |_| {
        super::pace::chosen(settings::selected_task())
    });
    on("stop-at-end", "change", |_| super::pace::send());
    on("text-train", "click", |_| super::train_on_text());
    on("text-builtin", "click", |_| super::train_on_builtin_text());
    on("replay", "input", |e| {
        let at = e
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            .and_then(|i| i.value().parse().ok());
        if let Some(at) = at {
            super::replay::choose(at);
        }
    });
    for button in dom::all("#datasets button") {
        let task = button.get_attribute("data-task").unwrap_or_default();
        let closure = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
            dom::set_value("task", &task);
            let _ = set_task(&task);
        });
        let _ = button.add_event_listener_with_callback("click", closure.as_ref().unchecked_ref());
        closure.forget();
    }
    on("save", "click", |_| post(Request::Save(Saving::Checkpoint)));
    on("lora-start", "click", |_| super::fine_tune());
    on("lora-adapters", "click", |_| {
        post(Request::Save(Saving::Adapters))
    });
    on("lora-merged", "click", |_| {
        post(Request::Save(Saving::Merged))
    });
    for id in ["load", "gpt2-file"] {
        on_chosen(id, load_file);
    }
    super::drop_file::wire_drop(load_file);
    on_file("text-file", |f| f.array_buffer(), use_text_file);
    on_file("points-file", |f| f.array_buffer(), use_points_file);
    on("points-builtin", "click", |_| {
        with(|s| s.own_points = None);
        dom::set_hidden("points-builtin", true);
        super::reset();
    });
    on("log-scale", "change", |_| with(|s| s.dirty = true));
    on("smoothing", "input", |_| with(|s| s.dirty = true));
    super::pointer::wire_pad();
    super::pointer::wire_views();
    // Space trains or pauses wherever the focus is, except where it types (a text field, a
    // list): on a button it would otherwise press that button (Reset, after a click on it).
    let keys = Closure::<dyn FnMut(web_sys::KeyboardEvent)>::new(|e: web_sys::KeyboardEvent| {
        if e.key() != " " || types_space(e.target()) {
            return;
        }
        e.prevent_default();
        if e.type_() == "keydown" && !e.repeat() {
            set_running(!with(|s| s.status.running));
        }
    });
    for event in ["keydown", "keyup"] {
        let _ =
            dom::document().add_event_listener_with_callback(event, keys.as_ref().unchecked_ref());
    }
    keys.forget();
}

/// Whether a key event's target takes a typed space: text fields, text areas and lists.
fn types_space(target: Option<web_sys::EventTarget>) -> bool {
    let Some(el) = target.and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else {
        return false;
    };
    match el.tag_name().as_str() {
        "TEXTAREA" | "SELECT" => true,
        "INPUT" => {
            let kind = el.get_attribute("type").unwrap_or_default();
            !matches!(
                kind.as_str(),
                "checkbox" | "radio" | "range" | "file" | "button"
            )
        }
        _ => el.has_attribute("contenteditable"),
    }
}

/// Puts a chosen text file's words in the text box and starts a run on them; a file that is
/// not text, or too short to train on, is refused with a sentence and the box keeps its text.
fn use_text_file(buffer: JsValue) {
    let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
    let text =
        crate::data::text_from_file(&bytes).and_then(|t| crate::data::Text::new(&t).map(|_| t));
    match text {
        Ok(text) => {
            if let Some(area) = dom::by_id::<web_sys::HtmlTextAreaElement>("user-text") {
                area.set_value(&text);
            }
            super::show_note(Some(
                "Your file is in the text box: train a model from scratch on it, or fine-tune this one on it.".into(),
            ));
        }
        Err(e) => super::show_error(Some(format!(
            "That file cannot be used as text: {}. Your text is unchanged.",
            e.reason()
        ))),
    }
}

/// Trains on a chosen CSV file of points when it holds good ones; otherwise says what is
/// wrong with it, and the points are unchanged.
fn use_points_file(buffer: JsValue) {
    let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
    let checked = String::from_utf8(bytes)
        .map_err(|_| "it is not a text file".to_string())
        .and_then(|text| {
            // Checked here, so that a bad file leaves the run alone; split again at Reset.
            let (data, _) = crate::data::points_from_csv(&text, 0.2, 0).map_err(|e| e.reason())?;
            Ok((text, data.train.len()))
        });
    match checked {
        Ok((text, train)) => {
            // A small file has fewer training points than the batch asks for.
            if dom::value("batch").parse().is_ok_and(|b: usize| b > train) {
                dom::set_value("batch", &train.to_string());
                let why = format!("Lowered to the {train} training points of your file.");
                dom::note_beside("batch", Some(&why));
            }
            with(|s| s.own_points = Some(text));
            dom::set_hidden("points-builtin", false);
            super::reset();
        }
        Err(why) => super::show_error(Some(format!(
            "That file cannot be used as points: {why}. The points are unchanged."
        ))),
    }
}

/// A checkpoint's (or a GPT-2's) bytes, read, to the worker.
fn load_bytes(buffer: JsValue) {
    post(Request::Load(Bytes(
        js_sys::Uint8Array::new(&buffer).to_vec(),
    )));
}

/// Reads `file` into the run as Load does; the page counts the seconds while it reads (a GPT-2
/// is hundreds of MB).
fn load_file(file: web_sys::File) {
    let name = file.name();
    let megabytes = file.size() / 1e6;
    with(|s| {
        s.busy = Some((
            format!("Reading {name} ({megabytes:.0} MB)"),
            js_sys::Date::now(),
        ));
        s.loading = Some(name);
    });
    read_then(file.array_buffer(), load_bytes);
}

/// Waits for `promise` (a file being read) and hands what it read to `done`; a failure becomes
/// the page's error sentence.
fn read_then(promise: js_sys::Promise, done: fn(JsValue)) {
    wasm_bindgen_futures::spawn_local(async move {
        match wasm_bindgen_futures::JsFuture::from(promise).await {
            Ok(value) => done(value),
            Err(e) => super::show_error(Some(format!(
                "That file cannot be read: {}",
                dom::js_error(e)
            ))),
        }
    });
}

/// When a file is chosen in the input `id`, hands it to `take`; the input is emptied, so that
/// choosing the same file again counts.
fn on_chosen(id: &str, take: impl Fn(web_sys::File) + 'static) {
    on(id, "change", move |e| {
        let Some(input) = e
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
        else {
            return;
        };
        let Some(file) = input.files().and_then(|f| f.get(0)) else {
            return;
        };
        input.set_value("");
        take(file);
    });
}

/// When a file is chosen in the input `id`, reads it with `read` (a File method returning a
/// promise) and hands the result to `done`.
fn on_file(id: &str, read: fn(&web_sys::File) -> js_sys::Promise, done: fn(JsValue)) {
    on_chosen(id, move |file| read_then(read(&file), done));
}

/// Offers `bytes` as a file download.
pub fn download(bytes: &[u8], name: &str) -> Result<(), String> {
    let array = js_sys::Uint8Array::from(bytes);
    let parts = js_sys::Array::of1(&array);
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/octet-stream");
    let blob = web_sys::Blob::new_with_u8_array_sequence_and_options(&parts, &options)
        .map_err(dom::js_error)?;
    let url = web_sys::Url::create_object_url_with_blob(&blob).map_err(dom::js_error)?;
    let a: web_sys::HtmlAnchorElement = dom::document()
        .create_element("a")
        .map_err(dom::js_error)?
        .unchecked_into();
    a.set_href(&url);
    a.set_download(name);
    a.click();
    let _ = web_sys::Url::revoke_object_url(&url);
    Ok(())
}
