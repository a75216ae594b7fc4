//! The worker's reports shown in the page: the stats line, the charts' figures, the views and
//! the sentences. Reports of a run the page has replaced are dropped, so that an old task's
//! figures never appear beside a new task's controls.

use super::charts::{self, Point};
use super::client::Heard;
use super::protocol::{Built, Envelope, Evaluated, PadView, Progress, Report};
use super::shared::SETTINGS_INVALID;
use super::shared::{
    clear_error_older_than, show_error, show_note, show_settings_invalid, with, Status,
};
use super::{api, dom, flow_chart, histogram_view, pad, redraw, runs, settings, views};
use super::{replay, summary, text_views};
use crate::gpu::{F16Products, PrecisionChoice};
use crate::train::Task;

/// Least milliseconds between two writes of the run to the browser's storage (each writes
/// every kept run).
const RUN_KEEP_EVERY_MS: f64 = 1000.0;

/// The run of reports about the worker itself rather than a run (its device, its start).
const WORKER_RUN: u64 = 0;

/// What the worker said: a report shown, or a worker the page lost.
pub fn heard(heard: Heard) {
    match heard {
        Heard::Report(envelope) => apply(envelope),
        Heard::Unreadable(why) => {
            // What it said is lost, so the page cannot know what the run is doing: pause it.
            api::set_running(false);
            paused();
            show_error(Some(format!(
                "The training worker said something the page cannot read: {why}"
            )));
        }
        Heard::Crashed => {
            paused();
            show_error(Some(
                "The training worker stopped with an error (the browser's console says which). Reload the page to train again.".into(),
            ));
        }
    }
}

fn apply(envelope: Envelope) {
    let (current, asks) = with(|s| (s.resets_asked, s.run_asks));
    // The worker paused on its own: whatever run it was about, it stopped training, unless a
    // Train the worker had not taken yet restarts it. (A worker that failed to start took none.)
    let stopped = matches!(envelope.report, Report::Finished(_) | Report::Failed(_));
    if stopped && (envelope.ask == asks || envelope.run == WORKER_RUN) {
        paused();
    }
    if envelope.run != current && envelope.run != WORKER_RUN {
        return;
    }
    // Figures or a failure end the long work the stats line was counting.
    if matches!(
        envelope.report,
        Report::Progress(_) | Report::Evaluated(_) | Report::Failed(_)
    ) {
        with(|s| {
            s.busy = None;
            s.dirty = true;
        });
    }
    match envelope.report {
        Report::Busy(what) => with(|s| {
            s.busy = what.map(|w| (w, js_sys::Date::now()));
            s.dirty = true;
        }),
        Report::Device(adapter) => {
            dom::set_text("adapter", &adapter);
            with(|s| s.status.adapter = adapter);
        }
        Report::Tuned(text) => super::tuning_store::store(&text),
        Report::Marks(marks) => settings::show_marks(&marks),
        Report::Preset(preset) => settings::show_preset(preset),
        Report::Built(built) => show_built(built, envelope.run),
        Report::Progress(progress) => show_progress(progress),
        Report::Evaluated(evaluated) => show_evaluated(evaluated),
        Report::Views(views) => {
            let step = with(|s| s.status.step);
            replay::keep(step, &views);
            with(|s| {
                s.views_step = step;
                s.views = Some(views);
            });
            redraw::views();
        }
        Report::Histograms(hists) => histogram_view::draw(&hists),
        Report::SampleStarted(start) => text_views::start_sample(&start),
        Report::Sampled(made) => text_views::add_sampled(&made),
        Report::BaseSample(text) => {
            // As the model wrote it: after the prompt it was given.
            let prompt = dom::value("prompt");
            dom::set_text("lora-before", &format!("{prompt}{text}"));
            dom::set_hidden("lora-before-box", false);
        }
        Report::PromptNote(note) => dom::note_beside("prompt", note.as_deref()),
        Report::Pad(view) => show_pad(view),
        Report::Saved { bytes, name } => {
            if let Err(e) = api::download(&bytes.0, &name) {
                show_error(Some(e));
            }
        }
        Report::Finished(note) => {
            with(|s| runs::keep(&s.run));
            if note.is_some() {
                show_note(note);
            }
        }
        Report::ScheduleEnd(note) => {
            with(|s| runs::keep(&s.run));
            show_note(Some(note));
        }
        Report::Loaded(step) => show_loaded(step),
        Report::Adopted(config) => {
            // The controls show the loaded model's task and settings, as a Reset of them
            // (its sizes as they are: not "auto", which would size a new model on Reset).
            super::edits::leave(with(|s| s.status.task));
            dom::set_value("task", config.task.as_ref());
            super::select_task(config.task);
            settings::show_defaults(&config);
            dom::set_value("gpt-size", "custom");
            api::update_url();
        }
        Report::Failed(why) if why == SETTINGS_INVALID => show_settings_invalid(),
        Report::Failed(why) => {
            with(|s| {
                s.train_when_built = false;
                s.own_text_asked = None;
            });
            show_error(Some(why));
        }
        Report::Note(note) => show_note(note),
        Report::ClearError => show_error(None),
        Report::Kept(step) => with(|s| s.status.kept_step = Some(step)),
        Report::Rewound(step) => with(|s| {
            s.history.retain(|p| p.step <= step);
            s.status.step = step;
            s.status.train_loss = s.history.iter().rev().find_map(|p| p.train);
            s.dirty = true;
        }),
        Report::Restart => super::reset(),
    }
}

/// Long work's line while it lasts past a second ("Building a 85.0 M-parameter model… 12 s"):
/// the worker cannot report while it builds, so the page counts.
pub fn busy_line() -> Option<String> {
    let (what, since) = with(|s| s.busy.clone())?;
    let seconds = ((js_sys::Date::now() - since) / 1000.0).floor();
    (seconds >= 1.0).then(|| format!("{what}… {seconds:.0}\u{a0}s"))
}

/// Training stopped without the page asking (the run's end, an error, the worker gone).
pub fn paused() {
    with(|s| s.status.running = false);
    api::show_running(false);
}

/// A new session: the run that ended is kept, the figures start afresh.
fn show_built(built: Built, asked: u64) {
    // The run that ends is kept before the list is drawn, so that it is in it; runs checked
    // for another task are dropped with that task's list.
    with(|s| runs::keep(&s.run));
    let run = runs::Run::begin(js_sys::Date::now() as u64);
    runs::show_list(&run, &runs::checked());
    let chosen = runs::checked();
    pad::clear_pad();
    dom::set_text("pad-guess", pad::PAD_PROMPT);
    // What was said of a file that could not be loaded is about the model this one replaces.
    dom::mark("load", None);
    with(|s| {
        s.run = run;
        s.overlays = runs::overlays(&chosen);
        s.history.clear();
        s.flows.clear();
        s.status.flow_step = None;
        s.views = None;
        s.frames.clear();
        s.schedule_end = built.steps;
        s.points = built.points;
        s.eval_every = built.eval_every;
        s.items_per_step = built.items_per_step;
        s.trained_ms = 0.0;
        s.dirty = true;
        s.status = Status {
            task: built.task,
            adapter: s.status.adapter.clone(),
            running: s.status.running,
            lora_rank: built.lora,
            backend: built.backend.clone(),
            precision: built.precision.as_ref().map(|c| c.sentence()),
            memory: s.status.memory,
            ..Default::default()
        };
    });
    replay::show_slider();
    text_views::show_progress();
    show_backend(built.backend.as_deref());
    show_precision(built.precision.as_ref());
    if let Some(points) = with(|s| s.points.clone()) {
        views::draw_data(&points);
    }
    // The text asked for is the base text now that a run took it.
    with(|s| {
        if let Some(text) = s.own_text_asked.take() {
            s.own_text = Some(text);
        }
    });
    super::show_text_source();
    if with(|s| std::mem::take(&mut s.train_when_built)) && built.lora.is_some() {
        api::set_running(true);
    }
    super::edits::applied();
    show_lora(built.lora.is_some());
    clear_error_older_than(asked);
    show_note(built.note);
    api::update_url();
    dom::set_text("sample-out", "");
    summary::show(&built.summary, built.parameters);
    if let Some((layers, heads)) = built.attention {
        text_views::offer_choices(layers, heads);
    }
}

fn show_progress(p: Progress) {
    with(|s| {
        s.status.step = p.step;
        s.status.steps_per_s = p.steps_per_s;
        s.status.memory = p.memory;
        s.trained_ms = p.trained_ms;
        s.dirty = true;
        if p.evaluated {
            return;
        }
        s.status.train_loss = p.train_loss;
        // A training point every fifth of an evaluation interval or so: enough for the
        // smoothed curve, few enough to redraw every frame.
        let every = s.eval_every.max(1);
        if s.history
            .last()
            .is_none_or(|q| q.step + every / 5 <= p.step)
        {
            s.history.push(Point {
                step: p.step,
                train: p.train_loss,
                val: None,
                acc: None,
                base: None,
            });
        }
    });
}

fn show_evaluated(e: Evaluated) {
    let keep_run = with(|s| {
        s.status.step = e.step;
        s.status.train_loss = e.train_loss.or(s.status.train_loss);
        s.status.val_loss = Some(e.val_loss);
        s.status.val_acc = e.val_acc;
        s.status.val_step = Some(e.step);
        s.status.base_loss = e.base_loss;
        s.history.push(Point {
            step: e.step,
            train: e.train_loss,
            val: Some(e.val_loss),
            acc: e.val_acc,
            base: e.base_loss,
        });
        if let Some(flow) = e
            .flow
            .filter(|f| s.flows.last().is_none_or(|l| l.step < f.step))
        {
            s.status.flow_step = Some(flow.step);
            s.flows.push(flow);
        }
        s.run.add(e.step, e.val_loss);
        s.dirty = true;
        let now = js_sys::Date::now();
        let due = now - s.run_kept_ms >= RUN_KEEP_EVERY_MS;
        if due {
            s.run_kept_ms = now;
        }
        due
    });
    if keep_run {
        with(|s| runs::keep(&s.run));
    }
}

/// The backend the page chose on auto, as a chip beside the adapter: its sentence on hover.
fn show_backend(sentence: Option<&str>) {
    let chip = sentence.map(|s| {
        let on = if s.starts_with("Training on the CPU") {
            "CPU"
        } else {
            "GPU"
        };
        format!("on the {on} (faster here)")
    });
    dom::set_text("backend-chip", chip.as_deref().unwrap_or(""));
    dom::set_hidden("backend-chip", chip.is_none());
    if let Some(el) = dom::by_id::<web_sys::Element>("backend-chip") {
        let _ = el.set_attribute("title", sentence.unwrap_or(""));
    }
}

/// The products' precision: a chip beside the adapter while they run in f16, its sentence on
/// hover; the sentence is also the precision control's hint, as f32 has no chip.
fn show_precision(choice: Option<&PrecisionChoice>) {
    let sentence = choice.map(|c| c.sentence());
    let chip = match choice.and_then(|c| c.products) {
        Some(F16Products::Arithmetic) => "f16, no matrix units",
        _ => "f16 on matrix units",
    };
    dom::set_text("precision-chip", chip);
    dom::set_hidden("precision-chip", !choice.is_some_and(|c| c.f16()));
    for id in ["precision-chip", "precision"] {
        if let Some(el) = dom::by_id::<web_sys::Element>(id) {
            let _ = match &sentence {
                Some(s) => el.set_attribute("title", s),
                None => el.remove_attribute("title"),
            };
        }
    }
}

/// A checkpoint went into the run: says which and at what step, and marks it on the chart.
fn show_loaded(step: u64) {
    let name = with(|s| s.loading.take()).unwrap_or_else(|| "the checkpoint".into());
    show_note(Some(format!("Loaded {name}: the model at step {step}.")));
    with(|s| {
        s.status.loaded = Some((name, step));
        s.history.retain(|p| p.step < step);
        s.frames.clear();
        s.dirty = true;
    });
    replay::show_slider();
}

/// A LoRA run offers its adapters and merged model as downloads; any new run drops the sample
/// taken before the last fine-tuning (a LoRA run's comes right after it is built).
fn show_lora(adapting: bool) {
    dom::set_hidden("lora-downloads", !adapting);
    dom::set_hidden("lora-before-box", true);
    dom::set_text("lora-before", "");
}

/// The pad's drawing as the model read it, unless the pad was cleared meanwhile.
fn show_pad(view: PadView) {
    if pad::pad_digit().is_none() || view.probs.is_empty() {
        return;
    }
    let best = views::argmax(&view.probs);
    let sure = 100.0 * view.probs[best as usize];
    dom::set_text(
        "pad-guess",
        &format!("I think it is a {best} ({sure:.0}% sure)."),
    );
    pad::show(&view.digit, &view.probs);
    with(|s| s.pad_maps = view.maps);
    redraw::maps();
}

/// The stats line and the charts, from the figures reported so far.
pub fn show_stats() {
    let (text, history, flows, overlays, marks) = with(|s| {
        let st = &s.status;
        let mut t = format!("step {}", st.step);
        if let Some(l) = st.train_loss {
            t += &format!(" · loss {l:.3}");
        }
        if let Some(l) = st.val_loss {
            t += &format!(" · val {l:.3}");
        }
        if let Some(a) = st.val_acc {
            t += &format!(" · acc {:.1}%", 100.0 * a);
        }
        if let Some(v) = st.val_step.filter(|&v| v < st.step) {
            t += &format!(" (step {v})");
        }
        if let Some(r) = st.steps_per_s {
            t += &format!(" · {r:.0} steps/s");
            if st.task == Task::Text {
                t += &format!(" · {:.0} tokens/s", r * s.items_per_step as f32);
            }
        }
        // A no-break space keeps the unit with its number when the line wraps.
        t += &format!(" · {:.0}\u{a0}s", s.trained_ms / 1000.0);
        let mut marks = vec![s.schedule_end];
        marks.extend(st.loaded.as_ref().map(|(_, step)| *step));
        (
            t,
            s.history.clone(),
            s.flows.clone(),
            s.overlays.clone(),
            marks,
        )
    });
    dom::set_text("stats", &text);
    charts::draw(
        &history,
        &overlays,
        &marks,
        dom::checked("log-scale"),
        dom::value("smoothing").parse().unwrap_or(0.8),
    );
    let last_step = history.last().map_or(0, |p| p.step);
    flow_chart::draw(&flows, last_step);
}
