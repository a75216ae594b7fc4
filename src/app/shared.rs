//! What the page keeps of the run the worker trains: the status `window.webgrad.state()`
//! returns, the chart's history, the latest views (redrawn when a view's option changes), the
//! choices of what the views show, and the sentences shown in the page.

use super::charts::Point;
use super::dom;
use super::protocol::{Choices, Points, Views};
use super::runs::Run;
use crate::train::{Flow, Inside, Task};
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
    /// The step the validation figures were taken at (the stats line says so once the run
    /// has moved on, so that they are not read as the current model's).
    pub val_step: Option<u64>,
    pub steps_per_s: Option<f32>,
    pub adapter: String,
    pub error: Option<String>,
    /// A sentence about the run, such as that it reached its step count.
    pub note: Option<String>,
    /// The step of the checkpoint kept on the CPU side, to resume from if the GPU is lost.
    pub kept_step: Option<u64>,
    /// A LoRA run's rank, and its latest loss on the text its base model learnt.
    pub lora_rank: Option<usize>,
    pub base_loss: Option<f32>,
    /// The step of the latest gradient flow on the flow chart.
    pub flow_step: Option<u64>,
    /// Why the run trains on the backend it does, when the page chose it (auto).
    pub backend: Option<String>,
    /// The precision of the products of a run on the GPU, and why.
    pub precision: Option<String>,
    /// The checkpoint loaded into the run, and the step it brought.
    pub loaded: Option<(String, u64)>,
    /// Whether a changed setting waits for Apply (Reset) to take effect.
    pub pending: bool,
    /// Characters of the sample being written, and how many it will have.
    pub sampling: Option<(usize, usize)>,
    /// What the worker held at the latest steps.
    pub memory: super::protocol::Memory,
}

#[derive(Default)]
pub(super) struct Shared {
    pub(super) status: Status,
    pub(super) history: Vec<Point>,
    /// Milliseconds the run has trained, evaluations included.
    pub(super) trained_ms: f64,
    /// The run's steps between evaluations, and tokens (or examples) per step.
    pub(super) eval_every: u64,
    pub(super) items_per_step: usize,
    /// The stats and charts need drawing at the next frame.
    pub(super) dirty: bool,
    /// When the run was last written to the browser's storage (ms since the epoch).
    pub(super) run_kept_ms: f64,
    /// The 2-D points of the run, and the latest views: a view's option redraws from them.
    pub(super) points: Option<Points>,
    pub(super) views: Option<Views>,
    /// The step the latest views were read at: the confusion matrix's accuracy is of that
    /// model, which may be newer than the last evaluation's.
    pub(super) views_step: u64,
    /// The pad's drawing through the model (its feature maps), while shown.
    pub(super) pad_maps: Vec<Inside>,
    /// Resets asked for so far: work of a session older than the latest request is stale.
    pub(super) resets_asked: u64,
    /// The Resets asked for when the error sentence was said.
    pub(super) error_after: u64,
    /// The gradient flow at each evaluation of the run.
    pub(super) flows: Vec<Flow>,
    /// The test digit chosen for the feature maps (None: the first).
    pub(super) selected_digit: Option<usize>,
    /// The confusion matrix's chosen cell (true, predicted), whose digits are shown.
    pub(super) chosen_cell: Option<(usize, usize)>,
    /// The digits shown for that cell, in order, to map a click to a digit.
    pub(super) cell_digits: Vec<usize>,
    /// Train and Pause requests sent so far: the worker's own pauses count only when it had
    /// taken the latest.
    pub(super) run_asks: u64,
    /// Whether the feature maps show the pad's drawing rather than a test digit.
    pub(super) drawn: bool,
    /// The current run, as run comparison keeps it.
    pub(super) run: Run,
    /// The user's own 2-D points (a CSV file's text), used instead of the task's set.
    pub(super) own_points: Option<String>,
    /// The validation curves of the earlier runs chosen for comparison.
    pub(super) overlays: Vec<(String, Vec<(u64, f32)>)>,
    /// The user's own text, once chosen to train on from scratch (the text box alone changes
    /// nothing: a fine-tuning reads it without making it the base's text).
    pub(super) own_text: Option<String>,
    /// The text asked for by "Train from scratch on it", until a run is built on it.
    pub(super) own_text_asked: Option<String>,
    /// Each task's settings as the user left them, restored on coming back to it.
    pub(super) edits: Vec<(Task, Vec<(String, String)>)>,
    /// The schedule's last step, marked on the loss chart.
    pub(super) schedule_end: u64,
    /// The name of the checkpoint file being loaded.
    pub(super) loading: Option<String>,
    /// Whether the next LoRA run built starts training (Fine-tune was pressed: it trains, it
    /// does not only set up; a refused text starts nothing).
    pub(super) train_when_built: bool,
    /// The views of the run at the steps they were read, to replay.
    pub(super) frames: super::frames::Frames,
    /// Long work under way in the worker, and when it began (ms): the stats line counts it.
    pub(super) busy: Option<(String, f64)>,
}

thread_local! {
    static SHARED: RefCell<Shared> = RefCell::new(Shared::default());
}

pub(super) fn with<T>(f: impl FnOnce(&mut Shared) -> T) -> T {
    SHARED.with(|s| f(&mut s.borrow_mut()))
}

/// What the views show, as the page's choices stand.
pub(super) fn choices() -> Choices {
    with(|s| Choices {
        digit: s.selected_digit,
        cell: s.chosen_cell,
        prompt: dom::value("prompt"),
        drawn: s.drawn,
        sampling: super::quiet_sample_settings(),
    })
}

/// Shows an error sentence (or clears it) in the page and in `state()`.
pub(super) fn show_error(message: Option<String>) {
    dom::set_text("error", message.as_deref().unwrap_or(""));
    dom::set_hidden("error", message.is_none());
    with(|s| {
        s.status.error = message;
        s.error_after = s.resets_asked;
    });
}

/// Clears the error sentence when it was said before the run `run` was asked for: a run built
/// does not erase what was said of a later action (a file refused while it was being built).
pub(super) fn clear_error_older_than(run: u64) {
    if with(|s| s.error_after < run) {
        show_error(None);
    }
}

pub(super) use super::protocol::SETTINGS_INVALID;

/// Whether the error shown is about invalid settings: no run could be built from them, so
/// there is nothing to train until they are fixed.
pub(super) fn settings_invalid() -> bool {
    with(|s| {
        s.status
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with(SETTINGS_INVALID))
    })
}

/// The error about invalid settings, naming the controls marked invalid by their labels: on a
/// phone the notes beside them are far below the sentence.
pub(super) fn show_settings_invalid() {
    let labels: Vec<String> = dom::invalid_settings()
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    let sentence = match labels.as_slice() {
        [] => format!("{SETTINGS_INVALID}; see the notes beside them."),
        _ => format!(
            "{SETTINGS_INVALID}: {}. See the notes beside them.",
            labels.join(", ")
        ),
    };
    show_error(Some(sentence));
}

/// Hides the error about invalid settings, whose cause is gone.
pub(super) fn clear_settings_invalid() {
    if settings_invalid() {
        show_error(None);
    }
}

/// Shows (or, with None, hides) a sentence about the run beside the stats.
pub(super) fn show_note(message: Option<String>) {
    dom::set_text("note", message.as_deref().unwrap_or(""));
    dom::set_hidden("note", message.is_none());
    with(|s| s.status.note = message);
}
