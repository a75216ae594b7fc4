//! Training settings: what a run is, with each task's defaults. Shared by the CLI, the page
//! (which keeps them in the URL) and checkpoints.

use super::task::{Task, TASKS};
use crate::nn::{Activation, CnnConfig, GptConfig, MlpConfig};
use crate::optim::{OptimizerConfig, Rule, Schedule};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// The model family and its shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ModelConfig {
    Mlp(MlpConfig),
    Cnn(CnnConfig),
    Gpt(GptConfig),
}

impl ModelConfig {
    /// The family names `Config::defaults` takes.
    pub const FAMILIES: [&'static str; 3] = ["mlp", "cnn", "gpt"];
}

/// Everything that defines a training run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub task: Task,
    pub model: ModelConfig,
    pub optimizer: OptimizerConfig,
    pub batch: usize,
    pub steps: u64,
    pub seed: u64,
    /// Evaluate on the validation split every this many steps.
    pub eval_every: u64,
    /// Noise of the 2-D sets.
    pub noise: f64,
}

impl Config {
    /// The defaults of `task` with `model` (mlp, cnn, gpt; None for the task's own) and, for the
    /// GPT, a preset. `vocab` is the text's vocabulary size (ignored elsewhere).
    pub fn defaults(
        name: &str,
        model: Option<&str>,
        preset: Option<&str>,
        vocab: usize,
    ) -> Result<Config> {
        let bad = |why: String| {
            Err(Error::Invalid {
                op: "settings",
                why,
            })
        };
        let Some(task) = Task::parse(name) else {
            return bad(format!(
                "unknown task {name:?}; choose one of {}",
                TASKS.join(", ")
            ));
        };
        let points = task.point_set().is_some();
        let model = model.unwrap_or(match task {
            Task::Digits => "cnn",
            Task::Text => "gpt",
            _ => "mlp",
        });
        let adam = |lr| OptimizerConfig {
            rule: Rule::parse("adam").expect("adam exists"),
            lr,
            weight_decay: 0.0,
            clip: None,
            schedule: Schedule::Constant,
        };
        let (model, optimizer, batch, steps) = match (model, points, task) {
            ("mlp", true, _) => (
                ModelConfig::Mlp(MlpConfig {
                    inputs: 2,
                    outputs: 2,
                    depth: 3,
                    width: 32,
                    activation: Activation::Relu,
                }),
                adam(0.01),
                64,
                1500,
            ),
            ("mlp", false, Task::Digits) => (
                ModelConfig::Mlp(MlpConfig {
                    inputs: 784,
                    outputs: 10,
                    depth: 1,
                    width: 128,
                    activation: Activation::Relu,
                }),
                adam(0.003),
                32,
                1500,
            ),
            ("cnn", false, Task::Digits) => (
                ModelConfig::Cnn(CnnConfig {
                    channels: vec![8, 16],
                    hidden: 64,
                    classes: 10,
                    image: 28,
                }),
                adam(0.002),
                32,
                600,
            ),
            ("gpt", false, Task::Text) => {
                let name = preset.unwrap_or("tiny");
                let Some(gpt) = GptConfig::preset(name, vocab) else {
                    return bad(format!(
                        "unknown preset {name:?}; choose one of {}",
                        GptConfig::PRESETS.join(", ")
                    ));
                };
                let steps = if name == "tiny" { 1500 } else { 5000 };
                let opt = OptimizerConfig {
                    rule: Rule::parse("adamw").expect("adamw exists"),
                    lr: if name == "tiny" { 0.01 } else { 0.001 },
                    weight_decay: 0.01,
                    clip: Some(1.0),
                    schedule: Schedule::WarmupCosine {
                        warmup: 50,
                        total: steps,
                        min_ratio: 0.1,
                    },
                };
                (
                    ModelConfig::Gpt(gpt),
                    opt,
                    if name == "nanochar" { 64 } else { 32 },
                    steps,
                )
            }
            (m, _, t) => return bad(format!("the {t} task cannot use the model {m:?}")),
        };
        Ok(Config {
            task,
            model,
            optimizer,
            batch,
            steps,
            seed: 0,
            eval_every: 100,
            noise: 0.05,
        })
    }

    /// Checks everything a user can set, with a sentence for the first problem.
    pub fn check(&self) -> Result<()> {
        let bad = |why: &str| {
            Err(Error::Invalid {
                op: "settings",
                why: why.into(),
            })
        };
        if self.batch == 0 {
            return bad("the batch size must be at least 1");
        }
        if self.eval_every == 0 {
            return bad("evaluation must happen at least every so many steps (not 0)");
        }
        self.optimizer.check()
    }
}
