//! The train and sample commands.

use std::io::Write;
use std::time::Instant;
use webgrad::data::{digits_from_gzip, points, text_from_file, Text, Tokens};
use webgrad::gpu::Precision;
use webgrad::nn::{Gpt, GptConfig, Init};
use webgrad::train::{
    assign_all, is_hf_gpt2, sample as generate, BestKeeper, Checkpoint, Config, Eval, Footprint,
    ModelConfig, SampleSettings, Session, Task, TaskData, Verdict,
};
use webgrad::tune::How;
use webgrad::{Device, Gpu};

use super::args::{SampleArgs, TrainArgs};
use super::lora::{adapt_config, lora_base, text_for, Gpt2Flags, LoraBase, LoraFiles};
use super::saves::{Failure, Saves};

const DIGITS: &[u8] = include_bytes!("../../../web/data/digits.bin.gz");
pub(super) const SHAKESPEARE: &[u8] = include_bytes!("../../../web/data/shakespeare.txt.gz");

/// The GPU, tuned (src/tune/): what is measured the first time on an adapter is said once.
pub(super) fn device() -> Result<Device, String> {
    let gpu = pollster::block_on(Gpu::new()).map_err(|e| e.to_string())?;
    let tuned = webgrad::tune::tune_natively(&gpu);
    if let (How::Measured(_) | How::Failed(_), Some(sentence)) = (&tuned.how, tuned.sentence()) {
        eprintln!("note: {sentence}");
    }
    Ok(Device::Gpu(gpu))
}

/// Sets the products' precision on `device`, saying what was chosen where more than f32 was
/// asked for; f16 where the GPU cannot is an error.
pub(super) fn set_precision(device: &Device, asked: Precision) -> Result<(), String> {
    let Device::Gpu(gpu) = device else {
        return Ok(());
    };
    let choice = gpu.set_precision(asked).map_err(|e| e.to_string())?;
    if asked != Precision::F32 {
        eprintln!("note: {}", choice.sentence());
    }
    Ok(())
}

/// The product shapes of the model's first step timed as each of their variants
/// (webgrad::tune::tune_products), said once when something was timed. Failing, the planner's
/// variants stay, and the run goes on.
fn time_products(device: &Device) {
    let Device::Gpu(gpu) = device else {
        return;
    };
    match webgrad::tune::tune_products_natively(gpu) {
        Some(Ok(tuned)) => {
            if let Some(sentence) = tuned.sentence() {
                eprintln!("note: {sentence}");
            }
        }
        Some(Err(e)) => eprintln!("note: the product and attention shapes were not timed ({e})"),
        None => {}
    }
}

pub(super) fn read(path: &str) -> Result<Vec<u8>, String> {
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
            let in_file = |e: webgrad::Error| format!("{path}: {}", e.reason());
            let text = text_from_file(&read(path)?).and_then(|s| Text::new(&s));
            Ok(TaskData::Text(text.map_err(in_file)?))
        }
        None => Ok(TaskData::Text(Text::from_gzip(SHAKESPEARE).map_err(e)?)),
    }
}

/// The GPT of `config`, for the flag `--flag`; refused for a task that trains none.
fn gpt_for<'a>(config: &'a mut Config, flag: &str) -> Result<&'a mut GptConfig, String> {
    let task = config.task;
    match &mut config.model {
        ModelConfig::Gpt(gpt) => Ok(gpt),
        _ => Err(format!(
            "--{flag} applies to the GPT; the {task} task trains none"
        )),
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
        gpt_for(&mut config, "dropout")?.dropout = p;
    }
    if let Some(norm) = a.norm {
        gpt_for(&mut config, "norm")?.norm = norm;
    }
    if let Some(window) = a.window {
        gpt_for(&mut config, "window")?;
        config.window = Some(window);
    }
    if let Some(on) = a.recompute {
        gpt_for(&mut config, "recompute")?;
        config.recompute = on;
    }
    if let Some(rank) = a.lora_rank {
        let alpha = a.lora_alpha.unwrap_or(rank as f32);
        gpt_for(&mut config, "lora-rank")?.lora = Some(webgrad::nn::LoraConfig { rank, alpha });
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
    // Mixed precision's loss scale, and the steps it skipped for gradients that overflowed.
    if let Some(scale) = session.loss_scale() {
        let (scale, skipped) = pollster::block_on(scale.read()).map_err(|e| e.to_string())?;
        line["loss_scale"] = serde_json::json!(scale);
        line["skipped_steps"] = serde_json::json!(skipped);
    }
    // The most GPU memory the run held since the last line: its pool's buffers, those kept
    // free for reuse included.
    if let webgrad::Device::Gpu(gpu) = session.device() {
        let mb = gpu.take_peak_bytes() as f64 / 1e6;
        line["gpu_mb"] = serde_json::json!((mb * 10.0).round() / 10.0);
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

pub fn train(a: TrainArgs) -> Result<(), String> {
    let mut saves = Saves::check(a.save.as_deref(), a.save_last.as_deref())?;
    // LoRA on a loaded GPT: the file decides the model's sizes, and the text is read with its
    // tokenizer (fine-tuning on another text needs no new characters).
    let base = match (a.lora_rank, &a.load) {
        (Some(_), Some(path)) => Some(lora_base(path)?),
        _ => None,
    };
    let gpt2 = base.as_ref().is_some_and(LoraBase::is_gpt2);
    let files = LoraFiles::check(a.save_adapters.as_deref(), a.save_merged.as_deref(), gpt2)?;
    let data = match &base {
        Some(b) => TaskData::Text(text_for(a.text.as_deref(), b.tokenizer.clone())?),
        None => task_data(a.task, a.text.as_deref(), 0.05, a.seed)?,
    };
    let vocab = if let TaskData::Text(t) = &data {
        t.tokenizer.len()
    } else {
        0
    };
    let mut config = config(&a, vocab)?;
    if let Some(base) = &base {
        let flags = Gpt2Flags {
            window: a.window,
            batch: a.batch,
            lr: a.lr,
            steps: a.steps,
        };
        adapt_config(&mut config, base, a.dropout, flags)?;
    }
    // Before the GPU is opened: a setting's mistake is said alone.
    config.check().map_err(|e| e.to_string())?;
    let device = device()?;
    set_precision(&device, a.precision)?;
    // A LoRA run's base is loaded next: it is not drawn first.
    let make = match base.is_some() {
        true => Session::for_base,
        false => Session::new,
    };
    let mut session = make(config, data, &device).map_err(|e| e.to_string())?;
    match (&base, &a.load) {
        (Some(base), Some(path)) => base.load_into(&mut session, path)?,
        (None, Some(path)) => load(&mut session, path)?,
        _ => {}
    }
    let mut keeper = BestKeeper::new(a.patience);
    let stops = Stops {
        patience: a.patience,
        lose_device_at: a.lose_device_at,
    };
    run(&mut session, &mut keeper, &mut saves, stops).map_err(|f| saves.explain(&session, f))?;
    if let Device::Gpu(g) = &device {
        if let Some(report) = g.profile_report() {
            eprint!("{report}");
        }
    }
    saves
        .at_end(&session)
        .map_err(|f| saves.explain(&session, f))?;
    write_lora_files(&session, files)?;
    if let Some((loss, step)) = keeper.best() {
        eprintln!("best validation loss {loss:.4} at step {step}");
    }
    Ok(())
}

/// Loads the checkpoint at `path` into `session` (a GPT-2 file only as a LoRA run's base).
fn load(session: &mut Session, path: &str) -> Result<(), String> {
    let bytes = read(path)?;
    if is_hf_gpt2(&bytes) {
        return Err(format!(
            "{path} is a GPT-2, which fine-tunes with LoRA here: add --lora-rank 8"
        ));
    }
    let ck = Checkpoint::parse(&bytes).map_err(|e| format!("{path}: {}", e.reason()))?;
    session
        .load_parsed(&ck)
        .map_err(|e| format!("{path}: {}", e.reason()))?;
    if let Some(note) = ck.state_note() {
        eprintln!("note: {path}: {note}");
    }
    Ok(())
}

/// The adapters, PEFT's config and the merged model (with a GPT-2's config.json), where asked.
fn write_lora_files(session: &Session, files: LoraFiles) -> Result<(), String> {
    let e = |e: webgrad::Error| e.to_string();
    if let Some(to) = files.adapters {
        to.write(&pollster::block_on(session.save_adapters()).map_err(e)?)?;
    }
    if let Some(to) = files.peft_config {
        to.write(session.peft_config().map_err(e)?.as_bytes())?;
    }
    if let Some(to) = files.merged {
        to.write(&pollster::block_on(session.save_merged()).map_err(e)?)?;
    }
    if let (Some(to), Some(json)) = (files.merged_config, session.merged_config_json()) {
        to.write(json.as_bytes())?;
    }
    Ok(())
}

/// What ends a run before its step count, besides a failure.
#[derive(Clone, Copy)]
struct Stops {
    /// `--patience`: evaluations in a row without a better validation loss.
    patience: Option<u32>,
    /// The step after which the device is destroyed, for the device-loss test.
    lose_device_at: Option<u64>,
}

/// The training loop: steps, an evaluation every `eval_every`, the checkpoints `saves` asks
/// for at each evaluation, and the early stop of `--patience`.
fn run(
    session: &mut Session,
    keeper: &mut BestKeeper,
    saves: &mut Saves,
    stops: Stops,
) -> Result<(), Failure> {
    let (total, every) = (session.config.steps, session.config.eval_every);
    let start = Instant::now();
    let mut mark = (Instant::now(), session.step);
    let first_step = session.step + 1;
    while session.step < total {
        session.train_step()?;
        if session.step == first_step {
            time_products(session.device());
        }
        if stops.lose_device_at == Some(session.step) {
            if let Device::Gpu(g) = session.device() {
                g.destroy();
            }
        }
        if !session.step.is_multiple_of(every) && session.step != total {
            continue;
        }
        // The steps since the last evaluation are done once their loss is read: their rate
        // leaves out the evaluation, which is not training.
        let train_loss = pollster::block_on(session.check())?;
        let rate = (session.step - mark.1) as f64 / mark.0.elapsed().as_secs_f64();
        let eval = pollster::block_on(session.evaluate())?;
        report(session, train_loss, &eval, rate, start)?;
        let verdict = keeper.observe(eval.loss, session.step);
        saves.at_evaluation(session, verdict == Verdict::Best)?;
        mark = (Instant::now(), session.step);
        if verdict == Verdict::Stop {
            let n = stops.patience.unwrap_or_default();
            eprintln!("stopping: no lower validation loss in the last {n} evaluations");
            break;
        }
    }
    Ok(())
}

pub fn sample(a: SampleArgs) -> Result<(), String> {
    let path = &a.load;
    let bytes = read(path)?;
    let settings = SampleSettings {
        prompt: a.prompt,
        tokens: a.tokens,
        temperature: a.temperature,
        top_k: a.top_k,
        seed: a.seed,
    };
    if is_hf_gpt2(&bytes) {
        return super::gpt2::sample_gpt2(path, &bytes, a.adapters.as_deref(), settings);
    }
    if a.adapters.is_some() {
        return Err(format!(
            "--adapters go on a GPT-2 as Hugging Face publishes it; {path} is not one"
        ));
    }
    let ck = Checkpoint::parse(&bytes).map_err(|e| format!("{path}: {}", e.reason()))?;
    let (ModelConfig::Gpt(config), Some(tokenizer)) = (&ck.config.model, &ck.tokenizer) else {
        return Err(format!("{path} holds no text model to sample from"));
    };
    let device = device()?;
    // The config is the file's: check the whole model's size before building any of it.
    Footprint::of(&ck.config)
        .check(&device)
        .map_err(|e| format!("{path}: {}", e.reason()))?;
    let gpt = Gpt::new(config, &mut Init::for_loading(&device)).map_err(|e| e.to_string())?;
    let params = webgrad::nn::Module::parameters(&gpt);
    let values = ck
        .values_for(&params)
        .map_err(|e| format!("{path}: {}", e.reason()))?;
    assign_all(&params, &values).map_err(|e| e.to_string())?;
    print_sample(
        &gpt,
        tokenizer.tokens().map_err(|e| e.to_string())?,
        &settings,
    )
}

/// The prompt and what `gpt` writes after it, on stdout as it comes; a closed stdout (`| head`)
/// only means nobody reads the rest.
pub(super) fn print_sample(
    gpt: &Gpt,
    tokenizer: &dyn Tokens,
    settings: &SampleSettings,
) -> Result<(), String> {
    let mut stdout = std::io::stdout();
    let _ = write!(stdout, "{}", settings.prompt);
    pollster::block_on(generate(gpt, tokenizer, settings, |t| {
        let _ = write!(stdout, "{t}");
        let _ = stdout.flush();
    }))
    .map_err(|e| e.to_string())?;
    let _ = writeln!(stdout);
    Ok(())
}
