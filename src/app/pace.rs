//! The speed control and "stop at the schedule's end", sent to the worker as its pace. Each
//! kind of task starts at its own speed: the MLP's at a pace whose boundary a person can watch
//! form, the others as fast as the device goes; a speed chosen for a kind stays with it.

use super::client::post;
use super::dom;
use super::protocol::{Pace, Request};
use crate::train::Task;
use std::cell::RefCell;

thread_local! {
    /// The speed chosen for each kind of task (`super::kind`), once the user chose one.
    static CHOSEN: RefCell<Vec<(&'static str, String)>> = const { RefCell::new(Vec::new()) };
}

/// The speed a kind of task starts at.
fn starting_speed(kind: &str) -> &'static str {
    if kind == "points" {
        "30"
    } else {
        "max"
    }
}

/// Shows the speed of `task`'s kind and sends it.
pub fn show_default(task: Task) {
    let kind = super::kind(task);
    let chosen = CHOSEN.with(|c| {
        c.borrow()
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, v)| v.clone())
    });
    dom::set_value("speed", chosen.as_deref().unwrap_or(starting_speed(kind)));
    send();
}

/// The user chose a speed for the current task's kind.
pub fn chosen(task: Task) {
    let kind = super::kind(task);
    CHOSEN.with(|c| {
        let mut c = c.borrow_mut();
        c.retain(|(k, _)| *k != kind);
        c.push((kind, dom::value("speed")));
    });
    send();
}

/// Sends the pace the controls show.
pub fn send() {
    post(Request::Pace(Pace {
        steps_per_s: dom::value("speed").parse().ok(),
        stop_at_end: dom::checked("stop-at-end"),
    }));
}
