//! The settings as a schema, with no page in it: the controls' names, a config as the
//! controls show it, and the controls read back into a Config with a sentence for every invalid
//! one. The page (`settings`) and the training worker, which checks the settings once it knows
//! the data's size, share it.

use super::form::Form;
use crate::gpu::Precision;
use crate::nn::{Activation, CnnConfig, GptConfig, MlpConfig, Norm, Preset};
use crate::train::routing::Backend;
use crate::train::{Config, ModelConfig, Task};
use std::str::FromStr;

/// The controls that make up the settings, in URL order.
pub const CONTROLS: [&str; 21] = [
    "task",
    "gpt-size",
    "depth",
    "width",
    "activation",
    "noise",
    "channels",
    "hidden",
    "layers",
    "heads",
    "gpt-width",
    "context",
    "dropout",
    "norm",
    "optimizer",
    "lr",
    "schedule",
    "batch",
    "seed",
    "backend",
    "precision",
];

/// A config as the controls show it: (control, value) pairs.
pub fn defaults(config: &Config) -> Vec<(&'static str, String)> {
    let mut shown = vec![("task", config.task.to_string())];
    match &config.model {
        ModelConfig::Mlp(m) => shown.extend([
            ("depth", m.depth.to_string()),
            ("width", m.width.to_string()),
            ("activation", m.activation.to_string()),
        ]),
        ModelConfig::Cnn(c) => {
            let ch: Vec<String> = c.channels.iter().map(|c| c.to_string()).collect();
            shown.extend([("channels", ch.join(",")), ("hidden", c.hidden.to_string())]);
        }
        ModelConfig::Gpt(g) => shown.extend([
            ("layers", g.layers.to_string()),
            ("heads", g.heads.to_string()),
            ("gpt-width", g.width.to_string()),
            ("context", g.context.to_string()),
            ("dropout", g.dropout.to_string()),
            ("norm", g.norm.to_string()),
        ]),
    }
    shown.extend([
        ("optimizer", config.optimizer.rule.kind().to_string()),
        ("lr", config.optimizer.lr.to_string()),
        ("schedule", config.optimizer.schedule.kind().to_string()),
        ("batch", config.batch.to_string()),
        ("noise", config.noise.to_string()),
    ]);
    shown
}

/// Parses a control as T, marking it when it does not parse or `ok` rejects it. A whole
/// number written as a decimal ("5.0", "1e3") is taken as that whole number.
fn field<T: std::str::FromStr + Copy + Default>(
    form: &mut Form,
    id: &str,
    ok: impl Fn(T) -> Option<&'static str>,
    problems: &mut usize,
) -> T {
    let text = form.value(id);
    let parsed = text.trim().parse::<T>().ok().or_else(|| {
        let n = text.trim().parse::<f64>().ok()?;
        let whole = n.fract() == 0.0 && (0.0..WHOLE_EXACT).contains(&n);
        whole.then(|| (n as u64).to_string().parse().ok())?
    });
    let (v, problem) = match parsed {
        Some(v) => (v, ok(v)),
        None => (T::default(), Some(why_unparsed(&text, &ok))),
    };
    form.mark(id, problem);
    *problems += problem.is_some() as usize;
    v
}

/// Whole numbers below this are exact in an f64.
const WHOLE_EXACT: f64 = (1u64 << 53) as f64;

/// Why a control's text does not parse: for a number the control cannot hold (a whole-number
/// control given -2 or 1.5), the rule it breaks, said as `ok` says it of the nearest value.
fn why_unparsed<T: Default>(text: &str, ok: impl Fn(T) -> Option<&'static str>) -> &'static str {
    match text.trim().parse::<f64>() {
        Ok(n) if !n.is_finite() => "This must be a finite number.",
        Ok(n) if n < 0.0 => ok(T::default()).unwrap_or("This must not be negative."),
        Ok(n) if n.fract() != 0.0 => "This must be a whole number.",
        Ok(_) => "This number is too large.",
        Err(_) if text.trim().is_empty() => "This needs a number.",
        Err(_) => "This is not a number.",
    }
}

/// A select control read as the setting it names, marked when it names none (a hand-edited
/// URL): then `fallback`, counted as a problem.
fn choice<T: FromStr>(form: &mut Form, id: &str, fallback: T, problems: &mut usize) -> T {
    let parsed = form.value(id).parse::<T>().ok();
    form.mark(
        id,
        parsed
            .is_none()
            .then_some("Choose one of the listed options."),
    );
    *problems += parsed.is_none() as usize;
    parsed.unwrap_or(fallback)
}

/// Whether the size control asks for the GPT to be sized to the device on Reset ("auto"; a
/// named size or "custom", the sizes the controls show, is not).
pub fn sized_automatically(form: &Form) -> bool {
    form.value("gpt-size") == "auto"
}

/// The GPT size the size control names; None for auto and custom.
pub fn selected_preset(form: &Form) -> Option<Preset> {
    form.value("gpt-size").parse().ok()
}

/// A GPT preset as the controls show it, the size control naming it.
pub fn preset_values(preset: Preset) -> Vec<(&'static str, String)> {
    let mut shown = Config::defaults(Task::Text, None, Some(preset), 1)
        .map(|c| defaults(&c))
        .unwrap_or_default();
    shown.push(("gpt-size", preset.to_string()));
    shown
}

fn at_least_one(v: usize) -> Option<&'static str> {
    (v == 0).then_some("Must be at least 1.")
}

/// From 1 to `max`, the bounds the control itself shows (its `min` and `max`): a number typed
/// past them would otherwise build a model the page was not sized for.
fn one_to(v: usize, max: usize, why: &'static str) -> Option<&'static str> {
    at_least_one(v).or((v > max).then_some(why))
}

/// Reads the controls into a Config for `task`, starting from its defaults. Returns None (with
/// sentences beside the controls) when something is invalid; `examples` bounds the batch.
pub fn read(form: &mut Form, task: Task, vocab: usize, examples: usize) -> Option<Config> {
    let preset = selected_preset(form).filter(|_| task == Task::Text);
    let mut config = Config::defaults(task, None, preset, vocab).ok()?;
    let mut problems = 0;
    let p = &mut problems;
    config.model = read_model(form, config.model, p);
    read_optimizer(form, &mut config, p);
    config.batch = field(
        form,
        "batch",
        |b: usize| {
            at_least_one(b)
                .or((b > examples).then_some("The batch is larger than the training data."))
        },
        p,
    );
    config.seed = field(form, "seed", |_: u64| None, p);
    config.noise = field(
        form,
        "noise",
        |n: f64| (!(0.0..=1.0).contains(&n)).then_some("Between 0 and 1."),
        p,
    );
    choice(form, "backend", Backend::Auto, p);
    choice(form, "precision", Precision::Auto, p);
    (problems == 0).then_some(config)
}

/// The precision the precision control asks for (`read` marks a value it does not name).
pub fn precision(form: &Form) -> Precision {
    form.value("precision").parse().unwrap_or(Precision::Auto)
}

/// The backend the backend control asks for (`read` marks a value it does not name).
pub fn backend(form: &Form) -> Backend {
    form.value("backend").parse().unwrap_or_default()
}

/// The model's controls read over the task's default model, counting problems in `p`.
fn read_model(form: &mut Form, model: ModelConfig, p: &mut usize) -> ModelConfig {
    match model {
        ModelConfig::Mlp(m) => ModelConfig::Mlp(MlpConfig {
            depth: field(
                form,
                "depth",
                |v: usize| (v > 8).then_some("At most 8 layers."),
                p,
            ),
            width: field(
                form,
                "width",
                |v: usize| at_least_one(v).or((v > 1024).then_some("At most 1024.")),
                p,
            ),
            activation: choice(form, "activation", Activation::Relu, p),
            ..m
        }),
        ModelConfig::Cnn(c) => {
            // A part that is not a count (8,x) makes the whole list invalid.
            let channels: Vec<usize> = form
                .value("channels")
                .split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| s.trim().parse())
                .collect::<Result<_, _>>()
                .unwrap_or_default();
            let bad = channels.is_empty() || channels.contains(&0) || channels.len() > 4;
            form.mark(
                "channels",
                bad.then_some("Give 1 to 4 positive channel counts, like 8,16."),
            );
            *p += bad as usize;
            ModelConfig::Cnn(CnnConfig {
                channels,
                hidden: field(form, "hidden", |v| one_to(v, 1024, "At most 1024."), p),
                ..c
            })
        }
        ModelConfig::Gpt(g) => {
            let width = field(form, "gpt-width", |v| one_to(v, 768, "At most 768."), p);
            let heads = field(
                form,
                "heads",
                |h: usize| {
                    one_to(h, 16, "At most 16 heads.")
                        .or((h > 0 && width % h != 0).then_some("The heads must divide the width."))
                },
                p,
            );
            ModelConfig::Gpt(GptConfig {
                layers: field(form, "layers", |v| one_to(v, 12, "At most 12 layers."), p),
                heads,
                width,
                context: field(
                    form,
                    "context",
                    |c: usize| {
                        (c < 2)
                            .then_some("At least 2.")
                            .or((c > 512).then_some("At most 512."))
                    },
                    p,
                ),
                dropout: field(
                    form,
                    "dropout",
                    |d: f32| (!(0.0..=0.9).contains(&d)).then_some("From 0 to 0.9."),
                    p,
                ),
                norm: choice(form, "norm", Norm::Layernorm, p),
                lora: None,
                ..g
            })
        }
    }
}

/// The optimizer's controls read over the task's default optimizer. A rule or schedule the
/// controls leave as the defaults have it keeps the defaults' own settings (a preset's beta2,
/// its warm-up); another one takes its standard settings.
fn read_optimizer(form: &mut Form, config: &mut Config, p: &mut usize) {
    let opt = &mut config.optimizer;
    opt.use_rule(choice(form, "optimizer", opt.rule.kind(), p));
    opt.lr = field(
        form,
        "lr",
        |v: f32| {
            (!(v > 0.0 && v.is_finite())).then_some("The learning rate must be a positive number.")
        },
        p,
    );
    let schedule = choice(form, "schedule", opt.schedule.kind(), p);
    if schedule != opt.schedule.kind() {
        opt.schedule = schedule.for_steps(config.steps);
    }
}
