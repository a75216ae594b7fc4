//! The playground page (wasm32 only). The page wires the controls and draws the charts and
//! views; a dedicated Web Worker (`trainer`, started by `client`) owns the GPU device, the
//! session and the training loop, so that the page stays responsive whatever a step costs.
//! They talk through `protocol`. All training goes through `train::Session`, the same as the
//! CLI's.

mod adapter;
mod api;
mod bench;
mod charts;
mod client;
mod cnn_views;
mod dom;
mod drop_file;
mod edits;
mod flow_chart;
mod form;
mod frames;
mod grid;
mod histogram_view;
mod network;
mod pace;
mod pad;
mod pointer;
mod present;
mod protocol;
mod redraw;
mod replay;
mod runs;
mod schema;
mod settings;
mod shared;
mod summary;
mod text_views;
mod trainer;
mod tuning_store;
mod views;

use crate::train::{Config, SampleSettings, Task};
use crate::Gpu;
use protocol::{FineTune, Plan, Request};
use shared::{clear_settings_invalid, settings_invalid, show_error, show_note, with};
use wasm_bindgen::prelude::*;

/// Characters a Sample writes.
const SAMPLE_CHARS: usize = 300;

/// Runs when the module loads; does nothing on pages without the playground (e.g. tests).
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    // In the training worker (no window) the worker's own entry point starts instead.
    if web_sys::window().is_none() || dom::by_id::<web_sys::HtmlElement>("task").is_none() {
        return;
    }
    let search = dom::search();
    if let Some(options) = bench::options(&search) {
        api::install();
        wasm_bindgen_futures::spawn_local(async move {
            if options.profile {
                crate::gpu::request_profile();
            }
            let gpu = Gpu::new().await.map_err(|e| e.to_string());
            bench::run(gpu, options, bench::precision(&search)).await;
        });
        return;
    }
    let task = settings::query_task(&search).unwrap_or_default();
    select_task(task);
    settings::apply_query(&search);
    api::install();
    api::wire_controls();
    fold_settings_on_a_phone();
    if let Err(e) = client::start(present::heard) {
        show_error(Some(e));
        return;
    }
    pace::send();
    // The first model takes seconds to come (the worker's module, the data, the device):
    // the page says so meanwhile.
    show_note(Some(format!("Preparing the {task} task…")));
    reset();
    wasm_bindgen_futures::spawn_local(draw_each_frame());
}

/// On a narrow screen the settings start folded, so that the views come first.
fn fold_settings_on_a_phone() {
    let narrow = web_sys::window()
        .and_then(|w| w.inner_width().ok())
        .and_then(|w| w.as_f64())
        .is_some_and(|w| w < PHONE_WIDTH);
    if let Some(details) = dom::by_id::<web_sys::HtmlDetailsElement>("settings") {
        details.set_open(!narrow);
    }
}

/// The widest screen, in CSS pixels, laid out for a phone (as in web/style.css).
const PHONE_WIDTH: f64 = 900.0;

/// Shows a task's controls and defaults.
pub(crate) fn select_task(task: Task) {
    let vocab = 1;
    if let Ok(config) = Config::defaults(task, None, None, vocab) {
        settings::show_defaults(&config);
    }
    let text = task == Task::Text;
    // The stylesheet shows only the parts of this kind of task (`for-points`, …).
    if let Some(stage) = dom::by_id::<web_sys::Element>("playground") {
        let _ = stage.set_attribute("data-kind", kind(task));
    }
    pace::show_default(task);
    for button in dom::all("#datasets button") {
        let pressed = button.get_attribute("data-task").as_deref() == Some(task.as_ref());
        let _ = button.set_attribute("aria-pressed", if pressed { "true" } else { "false" });
    }
    dom::set_hidden("acc-chart", text);
    dom::set_hidden("acc-caption", text);
    if text {
        dom::set_value("gpt-size", "auto");
    }
    with(|s| s.status.task = task);
}

/// The kind of a task, as the page's parts are marked for it.
fn kind(task: Task) -> &'static str {
    match task {
        Task::Digits => "digits",
        Task::Text => "text",
        _ => "points",
    }
}

/// Asks the worker for a new run from the controls (Reset, a task switched, own data chosen).
pub(crate) fn reset() {
    let run = new_run();
    let plan = Plan {
        run,
        task: settings::selected_task(),
        form: settings::from_page(),
        own_points: with(|s| s.own_points.clone()),
        user_text: with(|s| s.own_text_asked.clone().or(s.own_text.clone())).unwrap_or_default(),
        choices: shared::choices(),
    };
    client::post(Request::Reset(plan));
}

/// Counts a new run (its reports are the only ones shown from now on) and returns its number.
fn new_run() -> u64 {
    // The new run shows its first test digit, no cell and no drawing, on both sides.
    with(|s| {
        s.resets_asked += 1;
        s.selected_digit = None;
        s.chosen_cell = None;
        s.cell_digits.clear();
        s.drawn = false;
        s.pad_maps.clear();
        s.resets_asked
    })
}

/// Samples from the prompt and the sampling controls; what is wrong with them is said beside
/// the control, and training goes on.
pub(crate) fn sample() {
    if let Some(settings) = sample_settings() {
        client::post(Request::Sample(settings));
    }
}

/// The sampling controls as settings, each marked with what is wrong with it (and unmarked
/// when it is right); None while one is wrong.
fn sample_settings() -> Option<SampleSettings> {
    let (temperature, top_k) = sampling_controls();
    let why = "The temperature must be a number from 0.05 to 3.";
    dom::note_beside("temperature", temperature.is_none().then_some(why));
    let why = "Top-k must be a whole number from 0 (all characters) to 256.";
    dom::note_beside("top-k", top_k.is_none().then_some(why));
    quiet_sample_settings()
}

/// The sampling controls as settings, None while one is wrong (nothing is said of it).
pub(crate) fn quiet_sample_settings() -> Option<SampleSettings> {
    let (temperature, top_k) = sampling_controls();
    Some(SampleSettings {
        prompt: dom::value("prompt"),
        tokens: SAMPLE_CHARS,
        temperature: temperature?,
        top_k: top_k?,
        seed: js_sys::Date::now() as u64,
    })
}

/// The temperature and top-k controls, each None when out of its range.
fn sampling_controls() -> (Option<f32>, Option<usize>) {
    let temperature = dom::value("temperature").trim().parse::<f32>().ok();
    let top_k = dom::value("top-k").trim().parse::<usize>().ok();
    (
        temperature.filter(|t| (0.05..=3.0).contains(t)),
        top_k.filter(|k| *k <= 256),
    )
}

/// The text in the box becomes the text a new model trains on from scratch (until "Back to
/// Shakespeare"); an empty box is said beside it.
pub(crate) fn train_on_text() {
    let Some(text) = text_in_box("Paste the text to train on here first.") else {
        return;
    };
    // A prompt the new text's characters cannot write would refuse every sample: it becomes
    // the text's own first characters.
    let prompt = dom::value("prompt");
    if !prompt.chars().all(|c| text.contains(c)) {
        let opening: String = text.trim_start().chars().take(PROMPT_FROM_TEXT).collect();
        dom::set_value("prompt", &opening);
    }
    // It becomes the text of new models once a run is built on it (a refused text is not).
    with(|s| s.own_text_asked = Some(text));
    reset();
}

/// The user's text box, or None (with `why_empty` beside it) when it is empty; what was said
/// of the text before (a refused character, an empty box) goes.
fn text_in_box(why_empty: &str) -> Option<String> {
    let text = dom::value("user-text");
    let empty = text.trim().is_empty();
    dom::note_beside("user-text", empty.then_some(why_empty));
    (!empty).then_some(text)
}

/// Characters of the user's text taken as the prompt when the prompt does not fit it.
const PROMPT_FROM_TEXT: usize = 8;

/// Back to the built-in text, for the next model.
pub(crate) fn train_on_builtin_text() {
    with(|s| {
        s.own_text = None;
        s.own_text_asked = None;
    });
    show_text_source();
    reset();
}

/// Names the text new models train on.
pub(crate) fn show_text_source() {
    let own = with(|s| s.own_text.as_ref().map(|t| t.chars().count()));
    let line = match own {
        Some(n) => format!("Your text ({n} characters)."),
        None => "Shakespeare, or your own text below.".to_string(),
    };
    dom::set_text("text-source", &line);
    dom::set_hidden("text-builtin", own.is_none());
}

/// Asks the worker to fine-tune the model as it stands on the user's text with LoRA, as a new
/// run; a sample from the prompt before the first step is kept to compare.
pub(crate) fn fine_tune() {
    let Some(sample) = sample_settings() else {
        return;
    };
    let Some(text) = text_in_box("Paste the text to fine-tune on here first.") else {
        return;
    };
    let run = new_run();
    let rank = dom::value("lora-rank").parse().unwrap_or(8);
    client::post(Request::FineTune(FineTune {
        run,
        rank,
        text,
        sample,
    }));
    // Pressed to fine-tune, not to set one up: training starts once it is built.
    with(|s| s.train_when_built = true);
}

/// The pad's ink changed: the worker reads it (of the drawings that reach it between two
/// chunks of steps, only the latest).
pub(crate) fn pad_changed() {
    if let Some(digit) = pad::pad_digit() {
        with(|s| s.drawn = true);
        client::post(Request::Pad(Some(digit)));
    }
}

/// Trains (true) or pauses, as the person (or a script) asked.
pub(crate) fn set_running(on: bool) {
    let ask = with(|s| {
        s.status.running = on;
        s.run_asks += 1;
        s.run_asks
    });
    client::post(Request::Run { on, ask });
}

/// Asks the worker for the views of the page's current choices.
pub(crate) fn choose() {
    client::post(Request::Choose(shared::choices()));
}

/// Redraws the stats line and the charts at each animation frame after new figures came: the
/// worker's reports may come faster than frames.
async fn draw_each_frame() {
    loop {
        next_frame().await;
        if with(|s| std::mem::take(&mut s.dirty)) {
            present::show_stats();
        }
        if let Some(line) = present::busy_line() {
            dom::set_text("stats", &line);
        }
    }
}

/// A promise resolved at the next animation frame.
async fn next_frame() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(w) = web_sys::window() {
            let _ = w.request_animation_frame(&resolve);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}
