//! Run comparison, as TensorBoard does it: the page keeps the validation curves of the last
//! runs in the browser's storage, lists those of the current task with the settings that
//! differ from the current run's, and overlays the ones chosen on the loss chart.

use super::dom::{by_id, document};
use super::schema::CONTROLS;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;

/// The storage key, the runs kept, and the points kept of each curve.
const KEY: &str = "webgrad-runs";
const KEPT: usize = 12;
const MOST_POINTS: usize = 200;

/// One run: when it began, its task, its settings (control, value) and its validation curve.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Run {
    pub id: u64,
    pub task: String,
    pub settings: Vec<(String, String)>,
    pub val: Vec<(u64, f32)>,
}

impl Run {
    /// A new run of the controls' current settings.
    pub fn begin(id: u64) -> Run {
        // Only the controls of this task (the others are hidden, and may differ unseen).
        let settings: Vec<(String, String)> = CONTROLS
            .iter()
            .filter(|&&c| shown(c))
            .map(|&c| (c.to_string(), super::dom::value(c)))
            .collect();
        let task = super::dom::value("task");
        Run {
            id,
            task,
            settings,
            val: Vec::new(),
        }
    }

    /// Adds a validation point, halving the curve's resolution when it grows too long.
    pub fn add(&mut self, step: u64, val: f32) {
        self.val.push((step, val));
        if self.val.len() > MOST_POINTS {
            let last = self.val.pop();
            self.val = self.val.iter().copied().step_by(2).collect();
            self.val.extend(last);
        }
    }

    /// "lr 0.03, width 16": the settings where this run differs from `other`.
    pub fn differences(&self, other: &Run) -> String {
        let differ: Vec<String> = self
            .settings
            .iter()
            .filter(|(k, v)| other.settings.iter().any(|(k2, v2)| k2 == k && v2 != v))
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if differ.is_empty() {
            "the same settings".into()
        } else {
            differ.join(", ")
        }
    }
}

/// Whether the control `id` is shown (not inside a hidden part of the page).
fn shown(id: &str) -> bool {
    by_id::<web_sys::Element>(id).is_some_and(|e| e.closest("[hidden]").ok().flatten().is_none())
}

/// The browser's storage of this site, where it allows it.
pub(super) fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

/// The runs kept, oldest first (none when storage is off or holds something else).
pub fn kept() -> Vec<Run> {
    storage()
        .and_then(|s| s.get_item(KEY).ok()?)
        .and_then(|json| serde_json::from_str(&json).ok())
        .unwrap_or_default()
}

/// Keeps `run` (replacing its earlier record), dropping the oldest beyond KEPT. A full or
/// blocked storage only means the run is not kept.
pub fn keep(run: &Run) {
    if run.val.len() < 2 {
        return;
    }
    let mut runs = kept();
    runs.retain(|r| r.id != run.id);
    runs.push(run.clone());
    let drop = runs.len().saturating_sub(KEPT);
    runs.drain(..drop);
    if let (Some(s), Ok(json)) = (storage(), serde_json::to_string(&runs)) {
        let _ = s.set_item(KEY, &json);
    }
}

/// Lists the kept runs of `current`'s task, newest first, each with a box to overlay it and
/// what differs from the current run.
pub fn show_list(current: &Run, chosen: &[u64]) {
    let Some(list) = document().get_element_by_id("runs") else {
        return;
    };
    list.set_inner_html("");
    let runs: Vec<Run> = kept()
        .into_iter()
        .rev()
        .filter(|r| r.task == current.task && r.id != current.id)
        .collect();
    super::dom::set_hidden("runs-empty", !runs.is_empty());
    for run in runs {
        let best = run.val.iter().map(|p| p.1).fold(f32::INFINITY, f32::min);
        let last = run.val.last().map_or(0, |p| p.0);
        let text = format!(
            " {}: {last} steps, best validation {best:.3}; {}",
            label(run.id),
            run.differences(current)
        );
        add_item(&list, run.id, &text, chosen.contains(&run.id));
    }
}

fn add_item(list: &web_sys::Element, id: u64, text: &str, checked: bool) {
    let doc = document();
    let (Ok(li), Ok(label), Ok(input)) = (
        doc.create_element("li"),
        doc.create_element("label"),
        doc.create_element("input"),
    ) else {
        return;
    };
    let input: web_sys::HtmlInputElement = input.unchecked_into();
    input.set_type("checkbox");
    input.set_checked(checked);
    let _ = input.set_attribute("data-run", &id.to_string());
    let _ = label.append_child(&input);
    let _ = label.append_with_str_1(text);
    let _ = li.append_child(&label);
    let _ = list.append_child(&li);
}

/// The ids of the runs whose boxes are checked.
pub fn checked() -> Vec<u64> {
    let Some(list) = by_id::<web_sys::Element>("runs") else {
        return Vec::new();
    };
    let Ok(boxes) = list.query_selector_all("input[data-run]") else {
        return Vec::new();
    };
    (0..boxes.length())
        .filter_map(|i| boxes.item(i)?.dyn_into::<web_sys::HtmlInputElement>().ok())
        .filter(|b| b.checked())
        .filter_map(|b| b.get_attribute("data-run")?.parse().ok())
        .collect()
}

/// The curves of the chosen runs, to overlay: a label and the points.
pub fn overlays(chosen: &[u64]) -> Vec<(String, Vec<(u64, f32)>)> {
    kept()
        .into_iter()
        .filter(|r| chosen.contains(&r.id))
        .map(|r| (label(r.id), r.val))
        .collect()
}

/// A run's name: the time it began ("run 14:03:52").
fn label(id: u64) -> String {
    let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(id as f64));
    let two = |v: u32| format!("{v:02}");
    format!(
        "run {}:{}:{}",
        two(date.get_hours()),
        two(date.get_minutes()),
        two(date.get_seconds())
    )
}
