//! The train and sample commands.

use crate::args::Args;
use std::io::Write;
use std::time::Instant;
use webgrad::data::{digits_from_gzip, points, PointSet, Text};
use webgrad::nn::{Gpt, Init};
use webgrad::optim::Rule;
use webgrad::train::{
    assign_all, sample as generate, Checkpoint, Config, ModelConfig, SampleSettings, Session,
    TaskData,
};
use webgrad::{Device, Gpu};

pub const USAGE: &str = "usage:
  webgrad train --task spiral|circles|xor|gauss|moons|digits|text [--model mlp|cnn|gpt]
                [--preset tiny|small|nanochar] [--steps N] [--batch B] [--lr X]
                [--optimizer sgd|adam|adamw] [--seed S] [--text FILE] [--save FILE] [--load FILE]
  webgrad sample --load FILE [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K]
  webgrad bench [--quick] [--only NAME,NAME]";

const DIGITS: &[u8] = include_bytes!("../../../web/data/digits.bin.gz");
const SHAKESPEARE: &[u8] = include_bytes!("../../../web/data/shakespeare.txt.gz");

fn device() -> Result<Device, String> {
    let gpu = pollster::block_on(Gpu::new()).map_err(|e| e.to_string())?;
    Ok(Device::Gpu(gpu))
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))
}

/// Writes through a temporary file and a rename, so a failure never leaves half a file.
fn write_atomically(path: &str, bytes: &[u8]) -> Result<(), String> {
    let tmp = format!("{path}.partial");
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {path}: {e}")
        })
}

fn task_data(
    task: &str,
    text_file: Option<&str>,
    noise: f64,
    seed: u64,
) -> Result<TaskData, String> {
    let e = |e: webgrad::Error| e.to_string();
    if let Some(set) = PointSet::parse(task) {
        return Ok(TaskData::Labelled(
            points(set, 2000, noise, 0.2, seed).map_err(e)?,
        ));
    }
    match task {
        "digits" => Ok(TaskData::Labelled(digits_from_gzip(DIGITS).map_err(e)?)),
        "text" => match text_file {
            Some(path) => {
                let s = String::from_utf8(read(path)?)
                    .map_err(|_| format!("{path} is not UTF-8 text"))?;
                Ok(TaskData::Text(Text::new(&s).map_err(e)?))
            }
            None => Ok(TaskData::Text(Text::from_gzip(SHAKESPEARE).map_err(e)?)),
        },
        other => Err(format!(
            "unknown task {other:?}; choose one of {}",
            webgrad::train::TASKS.join(", ")
        )),
    }
}

pub fn train(raw: &[String]) -> Result<(), String> {
    let known = [
        "task",
        "model",
        "preset",
        "steps",
        "batch",
        "lr",
        "optimizer",
        "seed",
        "text",
        "save",
        "load",
        "eval-every",
    ];
    let a = Args::parse(raw, &known)?;
    let task = a.text("task").ok_or("train needs --task")?;
    let seed = a.get("seed")?.unwrap_or(0);
    let data = task_data(task, a.text("text"), 0.05, seed)?;
    let vocab = if let TaskData::Text(t) = &data {
        t.vocab.len()
    } else {
        0
    };
    let mut config = Config::defaults(task, a.text("model"), a.text("preset"), vocab)
        .map_err(|e| e.to_string())?;
    config.seed = seed;
    if let Some(s) = a.get("steps")? {
        config.steps = s;
    }
    if let Some(b) = a.get("batch")? {
        config.batch = b;
    }
    if let Some(lr) = a.get("lr")? {
        config.optimizer.lr = lr;
    }
    if let Some(e) = a.get("eval-every")? {
        config.eval_every = e;
    }
    if let Some(name) = a.text("optimizer") {
        config.optimizer.rule = Rule::parse(name)
            .ok_or_else(|| format!("unknown optimizer {name:?}; choose sgd, adam or adamw"))?;
    }
    let device = device()?;
    let mut session = Session::new(config, data, &device).map_err(|e| e.to_string())?;
    if let Some(path) = a.text("load") {
        session
            .load(&read(path)?)
            .map_err(|e| format!("{path}: {e}"))?;
    }
    let total = session.config.steps;
    let every = session.config.eval_every;
    let start = Instant::now();
    let mut mark = (Instant::now(), session.step);
    let mut stdout = std::io::stdout();
    while session.step < total {
        session.train_step().map_err(|e| e.to_string())?;
        let done = session.step == total;
        if session.step % every == 0 || done {
            let train_loss = pollster::block_on(session.check()).map_err(|e| e.to_string())?;
            let eval = pollster::block_on(session.evaluate()).map_err(|e| e.to_string())?;
            let rate = (session.step - mark.1) as f64 / mark.0.elapsed().as_secs_f64();
            mark = (Instant::now(), session.step);
            let mut line = serde_json::json!({"step": session.step, "train_loss": train_loss, "val_loss": eval.loss, "steps_per_s": (rate * 100.0).round() / 100.0});
            if let Some(acc) = eval.accuracy {
                line["val_acc"] = serde_json::json!(acc);
            }
            writeln!(stdout, "{line}").map_err(|e| e.to_string())?;
            eprintln!(
                "[{:>5.1}s] step {}/{total}",
                start.elapsed().as_secs_f64(),
                session.step
            );
        }
    }
    if let Device::Gpu(g) = &device {
        if let Some(report) = g.profile_report() {
            eprint!("{report}");
        }
    }
    if let Some(path) = a.text("save") {
        let bytes = pollster::block_on(session.save()).map_err(|e| e.to_string())?;
        write_atomically(path, &bytes)?;
    }
    Ok(())
}

pub fn sample(raw: &[String]) -> Result<(), String> {
    let a = Args::parse(
        raw,
        &["load", "prompt", "tokens", "temperature", "top-k", "seed"],
    )?;
    let path = a.text("load").ok_or("sample needs --load FILE")?;
    let ck = Checkpoint::parse(&read(path)?).map_err(|e| format!("{path}: {e}"))?;
    let (ModelConfig::Gpt(config), Some(vocab)) = (&ck.config.model, &ck.vocab) else {
        return Err(format!("{path} holds no text model to sample from"));
    };
    let device = device()?;
    let gpt = Gpt::new(config, &mut Init::new(0, &device)).map_err(|e| e.to_string())?;
    let params = webgrad::nn::Module::parameters(&gpt);
    let values = ck.values_for(&params).map_err(|e| format!("{path}: {e}"))?;
    assign_all(&params, &values).map_err(|e| e.to_string())?;
    let settings = SampleSettings {
        prompt: a.text("prompt").unwrap_or("").to_string(),
        tokens: a.get("tokens")?.unwrap_or(500),
        temperature: a.get("temperature")?.unwrap_or(0.8),
        top_k: a.get("top-k")?.unwrap_or(0),
        seed: a.get("seed")?.unwrap_or(0),
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
