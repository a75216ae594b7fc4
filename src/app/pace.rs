//! The speed control and "stop at the schedule's end", sent to the worker as its pace. Each
//! kind of task starts at its own speed: the MLP's at a pace whose boundary a person can watch
//! form, the others as fast as the device goes; a speed chosen for a kind stays with it.

use super::client::post;
use super::dom;
use super::protocol::{Pace, Request};
use crate::train::Task;
use std::cell::RefCell;

thread_local! {
    /// The speed chosen for each kind of task (points, digits, text), once the user chose one.
    static CHOSEN: RefCell<[Option<String>; 3]> = const { RefCell::new([None, None, None]) };
}

/// Index of a task's kind in CHOSEN, and the speed it starts at.
fn kind(task: Task) -> (usize, &'static str) {
    match task {
        Task::Digits => (1, "max"),
        Task::Text => (2, "max"),
        _ => (0, "30"),
    }
}

/// Shows the speed of `task`'s kind and sends it.
pub fn show_default(task: Task) {
    let (i, start) = kind(task);
    let speed = CHOSEN.with(|c| c.borrow()[i].clone());
    dom::set_value("speed", speed.as_deref().unwrap_or(start));
    send();
}

/// The user chose a speed for the current task's kind.
pub fn chosen(task: Task) {
    let (i, _) = kind(task);
    CHOSEN.with(|c| c.borrow_mut()[i] = Some(dom::value("speed")));
    send();
}

/// Sends the pace the controls show.
pub fn send() {
    post(Request::Pace(Pace {
        steps_per_s: dom::value("speed").parse().ok(),
        stop_at_end: dom::checked("stop-at-end"),
    }));
}
