//! The train and sample commands.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use std::io::Write;
use std::str::FromStr;
use std::time::Instant;
use strum::VariantNames;
use webgrad::data::{digits_from_gzip, points, Text};
use webgrad::nn::{Gpt, Init, Preset};
use webgrad::optim::RuleKind;
use webgrad::train::{
    assign_all, sample as generate, BestKeeper, Checkpoint, Config, Eval, Family, Footprint,
    ModelConfig, SampleSettings, Session, Task, TaskData, Verdict,
};
use webgrad::{Device, Gpu};

use super::destination::Destination;

/// Parses a flag as one of a settings enum's names, which --help lists.
fn named<T>() -> impl TypedValueParser<Value = T>
where
    T: VariantNames + FromStr<Err = strum::ParseError> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(T::VARIANTS).try_map(|name| name.parse::<T>())
}

/// `webgrad train`: a task's defaults, with what the flags change.
#[derive(clap::Args)]
pub struct TrainArgs {
    /// What to learn: a 2-D point set, handwritten digits or text.
    #[arg(long, value_parser = named::<Task>())]
    task: Task,
    /// The model family (default: the task's own: mlp for points, cnn for digits, gpt for text).
    #[arg(long, value_parser = named::<Family>())]
    model: Option<Family>,
    /// The GPT's size (text only; default tiny).
    #[arg(long, value_parser = named::<Preset>())]
    preset: Option<Preset>,
    /// Training steps (default: the task's).
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Examples per step (default: the task's).
    #[arg(long, value_name = "B")]
    batch: Option<usize>,
    /// Learning rate (default: the task's).
    #[arg(long, value_name = "X", allow_hyphen_values = true)]
    lr: Option<f32>,
    /// The update rule (default: the task's, Adam or AdamW).
    #[arg(long, value_parser = named::<RuleKind>())]
    optimizer: Option<RuleKind>,
    /// Seed of the initial weights, the data and the batches.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// A UTF-8 text file to train on (text only; default: the built-in Shakespeare).
    #[arg(long, value_name = "FILE")]
    text: Option<String>,
    /// Write the weights and settings with the lowest validation loss here (safetensors),
    /// each time an evaluation beats the best so far.
    #[arg(long, value_name = "FILE")]
    save: Option<String>,
    /// Write the weights and settings of the last step here (safetensors).
    #[arg(long, value_name = "FILE")]
    save_last: Option<String>,
    /// Stop after N evaluations in a row without a lower validation loss.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    patience: Option<u32>,
    /// The GPT's dropout probability in training (text only; default: the preset's).
    #[arg(long, value_name = "P")]
    dropout: Option<f32>,
    /// Start from a checkpoint of the same task and model.
    #[arg(long, value_name = "FILE")]
    load: Option<String>,
    /// Evaluate on the validation split every N steps (default: the task's).
    #[arg(long, value_name = "N")]
    eval_every: Option<u64>,
}

/// `webgrad sample`: text from a saved GPT.
#[derive(clap::Args)]
pub struct SampleArgs {
    /// A checkpoint saved by `webgrad train --task text --save FILE`.
    #[arg(long, value_name = "FILE")]
    load: String,
    /// Text the model continues.
    #[arg(long, default_value = "")]
    prompt: String,
    /// Characters to generate.
    #[arg(long, value_name = "N", default_value_t = 500)]
    tokens: usize,
    /// Softmax temperature: lower is more predictable.
    #[arg(long, value_name = "T", default_value_t = 0.8)]
    temperature: f32,
    /// Sample among the K likeliest characters only (0: all).
    #[arg(long, value_name = "K", default_value_t = 0)]
    top_k: usize,
    /// Seed of the sampling.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
}

const DIGITS: &[u8] = include_bytes!("../../../web/data/digits.bin.gz");
const SHAKESPEARE: &[u8] = include_bytes!("../../../web/data/shakespeare.txt.gz");

fn device() -> Result<Device, String> {
    let gpu = pollster::block_on(Gpu::new()).map_err(|e| e.to_string())?;
    Ok(Device::Gpu(gpu))
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))
}

fn task_data(
    task: Task,
    text_file: Option<&str>,
    noise: f64,
    seed: u64,
) -> Result<TaskData, String> {
    let e = |e: webgrad::Error| e.to_string();
    if let Some(set) = task.point_set() {
        return Ok(TaskData::Labelled(
            points(set, 2000, noise, 0.2, seed).map_err(e)?,
        ));
    }
    if task == Task::Digits {
        return Ok(TaskData::Labelled(digits_from_gzip(DIGITS).map_err(e)?));
    }
    match text_file {
        Some(path) => {
            let s =
                String::from_utf8(read(path)?).map_err(|_| format!("{path} is not UTF-8 text"))?;
            Ok(TaskData::Text(Text::new(&s).map_err(e)?))
        }
        None => Ok(TaskData::Text(Text::from_gzip(SHAKESPEARE).map_err(e)?)),
    }
}

/// The task's defaults with the flags applied.
fn config(a: &TrainArgs, vocab: usize) -> Result<Config, String> {
    if a.text.is_some() && a.task != Task::Text {
        return Err(format!(
            "--text applies to the text task; the {} task has its own data",
            a.task
        ));
    }
    let mut config =
        Config::defaults(a.task, a.model, a.preset, vocab).map_err(|e| e.to_string())?;
    config.seed = a.seed;
    if let Some(steps) = a.steps {
        config.set_steps(steps);
    }
    config.batch = a.batch.unwrap_or(config.batch);
    config.optimizer.lr = a.lr.unwrap_or(config.optimizer.lr);
    config.eval_every = a.eval_every.unwrap_or(config.eval_every);
    if let Some(rule) = a.optimizer {
        config.optimizer.use_rule(rule);
    }
    if let Some(p) = a.dropout {
        let ModelConfig::Gpt(gpt) = &mut config.model else {
            return Err(format!(
                "--dropout applies to the GPT; the {} task trains none",
                a.task
            ));
        };
        gpt.dropout = p;
    }
    Ok(config)
}

/// One evaluation's line on stdout (JSON) and its progress note on stderr.
fn report(
    session: &Session,
    train_loss: f32,
    eval: &Eval,
    rate: f64,
    start: Instant,
) -> Result<(), String> {
    let mut line = serde_json::json!({"step": session.step, "train_loss": train_loss, "val_loss": eval.loss, "steps_per_s": (rate * 100.0).round() / 100.0});
    if let Some(acc) = eval.accuracy {
        line["val_acc"] = serde_json::json!(acc);
    }
    if let Some(noise) = eval.noise {
        line["val_noise"] = serde_json::json!((noise * 1e4).round() / 1e4);
    }
    writeln!(std::io::stdout(), "{line}").map_err(|e| e.to_string())?;
    eprintln!(
        "[{:>5.1}s] step {}/{}",
        start.elapsed().as_secs_f64(),
        session.step,
        session.config.steps
    );
    Ok(())
}

/// Writes the session's checkpoint to `to`, if one was asked for.
fn save(session: &Session, to: Option<&Destination>) -> Result<(), String> {
    let Some(to) = to else { return Ok(()) };
    let bytes = pollster::block_on(session.save()).map_err(|e| e.to_string())?;
    to.write(&bytes)
}

/// The places `--save` and `--save-last` name, checked before anything is trained.
struct Saves {
    best: Option<Destination>,
    last: Option<Destination>,
}

impl Saves {
    fn check(a: &TrainArgs) -> Result<Saves, String> {
        let check = |p: &Option<String>| p.as_deref().map(Destination::check).transpose();
        Ok(Saves {
            best: check(&a.save)?,
            last: check(&a.save_last)?,
        })
    }

    /// After a diverged run, whose session holds the last good weights again: writes them
    /// where the user asked for the last weights, and where `--save` has nothing yet.
    fn rescue(&self, session: &Session, saved_best: bool, why: String) -> String {
        let mut places = vec![&self.last];
        if !saved_best {
            places.push(&self.best);
        }
        let written: Vec<&str> = places
            .into_iter()
            .flatten()
            .filter_map(|d| save(session, Some(d)).ok().map(|_| d.shown()))
            .collect();
        match written.as_slice() {
            [] => why,
            w => format!(
                "{why}; the last good weights were saved to {}",
                w.join(" and ")
            ),
        }
    }
}

pub fn train(a: TrainArgs) -> Result<(), String> {
    let saves = Saves::check(&a)?;
    let data = task_data(a.task, a.text.as_deref(), 0.05, a.seed)?;
    let vocab = if let TaskData::Text(t) = &data {
        t.vocab.len()
    } else {
        0
    };
    let config = config(&a, vocab)?;
    let device = device()?;
    let mut session = Session::new(config, data, &device).map_err(|e| e.to_string())?;
    if let Some(path) = &a.load {
        session
            .load(&read(path)?)
            .map_err(|e| format!("{path}: {e}"))?;
    }
    let mut keeper = BestKeeper::new(a.patience);
    match run(&mut session, &mut keeper, &saves, a.patience) {
        Err(Failure::Diverged(why)) => {
            return Err(saves.rescue(
                &session,
                keeper.best().is_some() && saves.best.is_some(),
                why,
            ))
        }
        Err(Failure::Other(why)) => return Err(why),
        Ok(()) => {}
    }
    if let Device::Gpu(g) = &device {
        if let Some(report) = g.profile_report() {
            eprint!("{report}");
        }
    }
    save(&session, saves.last.as_ref())?;
    if let Some((loss, step)) = keeper.best() {
        eprintln!("best validation loss {loss:.4} at step {step}");
    }
    Ok(())
}

/// Why a run stopped early: divergence leaves weights worth saving, other failures may not.
enum Failure {
    Diverged(String),
    Other(String),
}

impl From<webgrad::Error> for Failure {
    fn from(e: webgrad::Error) -> Failure {
        match e {
            webgrad::Error::Diverged { .. } => Failure::Diverged(e.to_string()),
            e => Failure::Other(e.to_string()),
        }
    }
}

impl From<String> for Failure {
    fn from(why: String) -> Failure {
        Failure::Other(why)
    }
}

/// The training loop: steps, an evaluation every `eval_every`, the best weights saved on each
/// improvement, and the early stop of `--patience`.
fn run(
    session: &mut Session,
    keeper: &mut BestKeeper,
    saves: &Saves,
    patience: Option<u32>,
) -> Result<(), Failure> {
    let (total, every) = (session.config.steps, session.config.eval_every);
    let start = Instant::now();
    let mut mark = (Instant::now(), session.step);
    while session.step < total {
        session.train_step()?;
        if session.step % every != 0 && session.step != total {
            continue;
        }
        let train_loss = pollster::block_on(session.check())?;
        let eval = pollster::block_on(session.evaluate())?;
        let rate = (session.step - mark.1) as f64 / mark.0.elapsed().as_secs_f64();
        report(session, train_loss, &eval, rate, start)?;
        let verdict = keeper.observe(eval.loss, session.step);
        if verdict == Verdict::Best {
            save(session, saves.best.as_ref())?;
        }
        mark = (Instant::now(), session.step);
        if verdict == Verdict::Stop {
            let n = patience.unwrap_or_default();
            eprintln!("stopping: no lower validation loss in the last {n} evaluations");
            break;
        }
    }
    Ok(())
}

pub fn sample(a: SampleArgs) -> Result<(), String> {
    let path = &a.load;
    let ck = Checkpoint::parse(&read(path)?).map_err(|e| format!("{path}: {e}"))?;
    let (ModelConfig::Gpt(config), Some(vocab)) = (&ck.config.model, &ck.vocab) else {
        return Err(format!("{path} holds no text model to sample from"));
    };
    let device = device()?;
    // The config is the file's: check the whole model's size before building any of it.
    Footprint::of(&ck.config)
        .check(&device)
        .map_err(|e| format!("{path}: {e}"))?;
    let gpt = Gpt::new(config, &mut Init::new(0, &device)).map_err(|e| e.to_string())?;
    let params = webgrad::nn::Module::parameters(&gpt);
    let values = ck.values_for(&params).map_err(|e| format!("{path}: {e}"))?;
    assign_all(&params, &values).map_err(|e| e.to_string())?;
    let settings = SampleSettings {
        prompt: a.prompt,
        tokens: a.tokens,
        temperature: a.temperature,
        top_k: a.top_k,
        seed: a.seed,
    };
    print!("{}", settings.prompt);
    let mut stdout = std::io::stdout();
    pollster::block_on(generate(&gpt, vocab, &settings, |t| {
        let _ = write!(stdout, "{t}");
        let _ = stdout.flush();
    }))
    .map_err(|e| e.to_string())?;
    println!();
    Ok(())
}
