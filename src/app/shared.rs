//! What the page's controls and its training loop share: the status `window.webgrad.state()`
//! returns, the commands the controls send the loop, the chart's history, and the sentences
//! shown in the page.

use super::charts::Point;
use super::dom;
use super::runs::Run;
use crate::train::{Flow, Task};
use serde::Serialize;
use std::cell::RefCell;

/// What `window.webgrad.state()` returns.
#[derive(Serialize, Clone, Default)]
pub struct Status {
    pub task: Task,
    pub running: bool,
    pub step: u64,
    pub train_loss: Option<f32>,
    pub val_loss: Option<f32>,
    pub val_acc: Option<f32>,
    pub steps_per_s: Option<f32>,
    pub adapter: String,
    pub error: Option<String>,
    /// A sentence about the run, such as that it reached its step count.
    pub note: Option<String>,
    /// The step of the checkpoint kept on the CPU side, to resume from if the GPU is lost.
    pub kept_step: Option<u64>,
}

/// Work the UI asks of the training loop, which owns the session.
pub(super) enum Command {
    Reset,
    Step,
    Save,
    Load(Vec<u8>),
    Sample,
    Pad,
    Redraw,
    /// Draws the views again (a digit or a cell was chosen, a view's option changed).
    Views,
    /// Destroys the GPU device, as a driver reset would (for tests).
    LoseDevice,
}

#[derive(Default)]
pub(super) struct Shared {
    pub(super) status: Status,
    pub(super) commands: Vec<Command>,
    pub(super) history: Vec<Point>,
    /// Resets asked for so far: work of a session older than the latest request is stale.
    pub(super) resets_asked: u64,
    /// The gradient flow at each evaluation of the run.
    pub(super) flows: Vec<Flow>,
    /// The test digit chosen for the feature maps (None: the first).
    pub(super) selected_digit: Option<usize>,
    /// The confusion matrix's chosen cell (true, predicted), whose digits are shown.
    pub(super) chosen_cell: Option<(usize, usize)>,
    /// The digits shown for that cell, in order, to map a click to a digit.
    pub(super) cell_digits: Vec<usize>,
    /// Whether the feature maps show the pad's drawing rather than a test digit.
    pub(super) drawn: bool,
    /// The current run, as run comparison keeps it.
    pub(super) run: Run,
    /// The user's own 2-D points (a CSV file's text), used instead of the task's set.
    pub(super) own_points: Option<String>,
    /// The validation curves of the earlier runs chosen for comparison.
    pub(super) overlays: Vec<(String, Vec<(u64, f32)>)>,
}

thread_local! {
    static SHARED: RefCell<Shared> = RefCell::new(Shared::default());
}

pub(super) fn with<T>(f: impl FnOnce(&mut Shared) -> T) -> T {
    SHARED.with(|s| f(&mut s.borrow_mut()))
}

pub(super) fn send(c: Command) {
    with(|s| {
        // One pending classification of the pad is enough, however fast the pointer moves.
        if matches!(c, Command::Pad) && s.commands.iter().any(|q| matches!(q, Command::Pad)) {
            return;
        }
        if matches!(c, Command::Reset) {
            s.resets_asked += 1;
        }
        s.commands.push(c)
    });
}

/// Shows an error sentence (or clears it) in the page and in `state()`.
pub(super) fn show_error(message: Option<String>) {
    dom::set_text("error", message.as_deref().unwrap_or(""));
    dom::set_hidden("error", message.is_none());
    with(|s| s.status.error = message);
}

/// The error shown when Reset finds invalid settings; fixing them removes it.
pub(super) const SETTINGS_INVALID: &str = "Some settings are not valid; see the notes beside them.";

/// Hides the error sentence if it is `message`, whose cause is gone.
pub(super) fn clear_error_if(message: &str) {
    if with(|s| s.status.error.as_deref() == Some(message)) {
        show_error(None);
    }
}

/// Shows (or, with None, hides) a sentence about the run beside the stats.
pub(super) fn show_note(message: Option<String>) {
    dom::set_text("note", message.as_deref().unwrap_or(""));
    dom::set_hidden("note", message.is_none());
    with(|s| s.status.note = message);
}
