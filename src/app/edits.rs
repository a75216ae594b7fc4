//! Settings as the user edits them. A cheap change (the MLP's size, activation, noise and
//! optimizer: a new network builds in a moment) takes effect at once, as a new run that goes
//! on training if training was on; any other waits for Apply, which the Reset button then
//! says. Each task keeps its own edits across task switches.

use super::shared::with;
use super::{dom, schema, settings};
use crate::train::Task;

/// Whether a change of the control `id` applies at once on `task`.
fn at_once(task: Task, id: &str) -> bool {
    const CHEAP: [&str; 9] = [
        "depth",
        "width",
        "activation",
        "noise",
        "lr",
        "optimizer",
        "schedule",
        "batch",
        "seed",
    ];
    task.point_set().is_some() && CHEAP.contains(&id)
}

/// A valid setting changed: a new run now, or Apply waits.
pub fn changed(id: &str) {
    if at_once(settings::selected_task(), id) {
        super::reset();
    } else {
        show_pending(true);
    }
}

/// A new run took the settings: nothing waits.
pub fn applied() {
    show_pending(false);
}

fn show_pending(pending: bool) {
    with(|s| s.status.pending = pending);
    dom::set_text("reset", if pending { "Apply" } else { "Reset" });
    if let Some(button) = dom::by_id::<web_sys::Element>("reset") {
        let _ = button.class_list().toggle_with_force("pending", pending);
        let title = match pending {
            true => "Changed settings take effect with a new model",
            false => "A new model from the settings",
        };
        let _ = button.set_attribute("title", title);
    }
}

/// Keeps the settings of the task being left.
pub fn leave(task: Task) {
    let form = settings::from_page();
    let kept: Vec<(String, String)> = schema::CONTROLS
        .iter()
        .filter(|id| **id != "task")
        .map(|id| (id.to_string(), form.value(id)))
        .collect();
    with(|s| {
        s.edits.retain(|(t, _)| *t != task);
        s.edits.push((task, kept));
    });
}

/// Puts back the settings the task was left with, if it was.
pub fn restore(task: Task) {
    let kept = with(|s| {
        s.edits
            .iter()
            .find(|(t, _)| *t == task)
            .map(|(_, v)| v.clone())
    });
    for (id, v) in kept.unwrap_or_default() {
        dom::set_value(&id, &v);
    }
}
