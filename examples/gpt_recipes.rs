//! Trains GPT recipes on Shakespeare one after another and prints the validation loss every
//! 100 steps: how the tiny preset was chosen (docs/TRAINING.md). The curve per step does not
//! depend on the adapter, so a fast GPU can sweep what lavapipe will run.
//!
//! RECIPES="context,layers,heads,width,batch,lr,steps[,seed];..." \
//!     cargo run --release --example gpt_recipes

#![cfg_attr(target_arch = "wasm32", allow(dead_code, unused_imports))]

use webgrad::data::Text;
use webgrad::nn::GptConfig;
use webgrad::train::{Config, ModelConfig, Session, Task, TaskData};
use webgrad::{Device, Gpu};

const SHAKESPEARE: &[u8] = include_bytes!("../web/data/shakespeare.txt.gz");
const USAGE: &str = "RECIPES must be context,layers,heads,width,batch,lr,steps[,seed];...";

/// Native only (it blocks on the GPU); the browser build of the tests compiles examples too.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::Gpu(pollster::block_on(Gpu::new())?);
    let recipes = std::env::var("RECIPES").map_err(|_| USAGE)?;
    for recipe in recipes.split(';') {
        let v: Vec<f64> = recipe
            .split(',')
            .map(|x| x.trim().parse())
            .collect::<Result<_, _>>()
            .map_err(|_| USAGE)?;
        if v.len() < 7 {
            return Err(USAGE.into());
        }
        let text = Text::from_gzip(SHAKESPEARE)?;
        let vocab = text.tokenizer.len();
        let mut config = Config::defaults(Task::Text, None, None, vocab)?;
        config.model = ModelConfig::Gpt(GptConfig {
            vocab,
            context: v[0] as usize,
            layers: v[1] as usize,
            heads: v[2] as usize,
            width: v[3] as usize,
            dropout: 0.0,
            norm: Default::default(),
            lora: None,
        });
        config.batch = v[4] as usize;
        config.optimizer.lr = v[5] as f32;
        config.set_steps(v[6] as u64);
        config.seed = v.get(7).copied().unwrap_or(0.0) as u64;
        let mut session = Session::new(config.clone(), TaskData::Text(text), &device)?;
        let mut line = format!("{recipe} ({} parameters):", session.parameter_count());
        let start = std::time::Instant::now();
        while session.step < config.steps {
            session.train_step()?;
            if session.step % 100 == 0 || session.step == config.steps {
                let eval = pollster::block_on(session.evaluate())?;
                line += &format!(" {}:{:.3}", session.step, eval.loss);
            }
        }
        println!("{line} ({:.1} s)", start.elapsed().as_secs_f64());
    }
    Ok(())
}
