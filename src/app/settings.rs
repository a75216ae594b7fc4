//! The settings controls in the page: filled from a task's defaults or the URL, read into a
//! Form for the schema (`schema::read`) to check, marked with what is wrong, and mirrored into
//! the URL.

use super::dom::{self, note_beside, set_value, value};
use super::form::Form;
use super::schema::{defaults, preset_values, CONTROLS};
use crate::gpu::{LimitsAsked, LIMITS_PARAM};
use crate::nn::Preset;
use crate::train::{Config, Task};
use strum::VariantNames;

/// The settings controls as the page shows them now.
pub fn from_page() -> Form {
    Form::new(
        CONTROLS
            .iter()
            .map(|id| (id.to_string(), value(id)))
            .collect(),
    )
}

/// Shows marks beside the page's controls.
pub fn show_marks(marks: &[(String, Option<String>)]) {
    for (id, problem) in marks {
        dom::mark(id, problem.as_deref());
    }
}

/// Shows a task's defaults in the controls.
pub fn show_defaults(config: &Config) {
    for (id, v) in defaults(config) {
        set_value(id, &v);
    }
}

/// Shows a GPT preset's sizes and recipe in the controls, and names it in the size control.
pub fn show_preset(preset: Preset) {
    for (id, v) in preset_values(preset) {
        set_value(id, &v);
    }
}

/// The task the task control shows (it lists only tasks, so the fallback is never seen).
pub fn selected_task() -> Task {
    value("task").parse().unwrap_or_default()
}

/// The settings as a query string, so that a link reproduces the run.
pub fn to_query() -> String {
    let params = web_sys::UrlSearchParams::new().expect("URLSearchParams");
    for id in CONTROLS {
        params.append(id, &value(id));
    }
    let query = String::from(params.to_string());
    // The device's limits are the page's, not a run's: a link that asked for them keeps them.
    match LimitsAsked::from_query(&dom::search()).to_query() {
        Some(limits) => format!("{query}&{limits}"),
        None => query,
    }
}

/// Fills the controls from the page's query string (after the task's defaults). A value a
/// control cannot show (an option it lacks, words in a number field) leaves the default there
/// with a sentence beside it, and so do a task that does not exist and names that are no
/// setting: a hand-edited link never changes a run silently.
pub fn apply_query(search: &str) {
    let Ok(params) = web_sys::UrlSearchParams::new_with_str(search) else {
        return;
    };
    for id in CONTROLS.iter().skip(1) {
        let Some(asked) = params.get(id) else {
            continue;
        };
        let default = value(id);
        set_value(id, &asked);
        if value(id) != asked {
            set_value(id, &default);
            note_beside(
                id,
                Some(&format!(
                    "The link asks for {asked:?} here, which this control does not take, so it shows the default."
                )),
            );
        }
    }
    // Sizes of the GPT in the link without a size named: the link's own, not a size measured
    // on Reset (which would replace them without a word).
    const GPT_SIZES: [&str; 6] = ["layers", "heads", "gpt-width", "context", "dropout", "norm"];
    if params.get("gpt-size").is_none() && GPT_SIZES.iter().any(|id| params.get(id).is_some()) {
        set_value("gpt-size", "custom");
    }
    let mut about_task = Vec::new();
    if let Some(asked) = params.get("task").filter(|t| t.parse::<Task>().is_err()) {
        about_task.push(format!(
            "The link asks for the task {asked:?}, which does not exist; choose one of {}.",
            Task::VARIANTS.join(", ")
        ));
    }
    let mut unknown: Vec<String> = Vec::new();
    let names = js_sys::try_iter(&params.keys()).ok().flatten();
    for name in names
        .into_iter()
        .flatten()
        .filter_map(|k| k.ok()?.as_string())
    {
        let known = CONTROLS.contains(&name.as_str()) || name == LIMITS_PARAM;
        if !known && !unknown.contains(&name) {
            unknown.push(name);
        }
    }
    if !unknown.is_empty() {
        about_task.push(format!(
            "The link names settings this page does not have ({}), so they were left out.",
            unknown.join(", ")
        ));
    }
    note_beside(
        "task",
        (!about_task.is_empty())
            .then(|| about_task.join(" "))
            .as_deref(),
    );
}

/// The task named in the query string, if it names one.
pub fn query_task(search: &str) -> Option<Task> {
    web_sys::UrlSearchParams::new_with_str(search)
        .ok()?
        .get("task")?
        .parse()
        .ok()
}
