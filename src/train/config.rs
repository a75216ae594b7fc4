//! Training settings: what a run is, with each task's defaults. Shared by the CLI, the page
//! (which keeps them in the URL) and checkpoints.

use super::task::Task;
use crate::nn::{Activation, CnnConfig, GptConfig, LoraConfig, MlpConfig, Preset};
use crate::optim::{DecayScope, OptimizerConfig, Rule, RuleKind, Schedule};
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
    /// The LoRA adapters of a GPT that has them.
    pub fn lora(&self) -> Option<LoraConfig> {
        match self {
            ModelConfig::Gpt(g) => g.lora,
            _ => None,
        }
    }
}

crate::setting_enum! {
    /// The model families by name, as `--model` chooses them.
    pub enum Family {
        Mlp,
        Cnn,
        Gpt,
    }
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
    /// Characters a text evaluation predicts: its cost, and its noise (about 0.005 nats at
    /// the default; see `Session::evaluate`). The page evaluates fewer, more often.
    #[serde(default = "default_eval_chars")]
    pub eval_chars: usize,
    /// Tokens in each training and evaluation window of a GPT, at most its context (None: the
    /// whole context). GPT-2 fine-tunes on windows far shorter than its 1,024 positions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<usize>,
    /// A GPT's blocks run again in backward instead of keeping their activations
    /// (`Gpt::set_recompute`): GPT-2's fine-tuning holds 2.1 GB less for a second pass through
    /// its blocks. `--recompute` in the CLI; on for GPT-2 in the page.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recompute: bool,
    /// A LoRA run's frozen weights (its projections and embeddings' tables) held in f16
    /// (src/tensor/half.rs): half their memory, widened as the products and gathers read them.
    /// Set on a GPU whose products run in f16 (`Gpu::frozen_f16`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub frozen_f16: bool,
    /// Noise of the 2-D sets.
    pub noise: f64,
}

/// Enough predicted characters for a validation loss whose noise is below 0.01 nats.
pub const EVAL_CHARS: usize = 1 << 17;

fn default_eval_chars() -> usize {
    EVAL_CHARS
}

/// A task's model, optimizer, batch and step count, before the user changes any.
struct Recipe {
    model: ModelConfig,
    optimizer: OptimizerConfig,
    batch: usize,
    steps: u64,
}

/// Adam at PyTorch's defaults with a constant learning rate.
fn adam(lr: f32) -> OptimizerConfig {
    OptimizerConfig {
        rule: RuleKind::Adam.defaults(),
        lr,
        weight_decay: 0.0,
        decay: DecayScope::All,
        clip: None,
        schedule: Schedule::Constant,
    }
}

/// An MLP on a 2-D point set (two classes).
fn points_mlp() -> Recipe {
    let model = ModelConfig::Mlp(MlpConfig {
        inputs: 2,
        outputs: 2,
        depth: 3,
        width: 32,
        activation: Activation::Relu,
    });
    Recipe {
        model,
        optimizer: adam(0.01),
        batch: 64,
        steps: 1500,
    }
}

/// An MLP on the 28 × 28 digits.
fn digits_mlp() -> Recipe {
    let model = ModelConfig::Mlp(MlpConfig {
        inputs: 784,
        outputs: 10,
        depth: 1,
        width: 128,
        activation: Activation::Relu,
    });
    Recipe {
        model,
        optimizer: adam(0.003),
        batch: 32,
        steps: 1500,
    }
}

/// A CNN on the 28 × 28 digits.
fn digits_cnn() -> Recipe {
    let model = ModelConfig::Cnn(CnnConfig {
        channels: vec![8, 16],
        hidden: 64,
        classes: 10,
        image: 28,
    });
    Recipe {
        model,
        optimizer: adam(0.002),
        batch: 32,
        steps: 600,
    }
}

/// A GPT of `preset`'s size on text of `vocab` characters: AdamW with clipping, weight decay
/// on matrices only and a warm-up then cosine schedule over the run. Nanochar is nanoGPT's
/// shakespeare_char recipe (lr 1e-3 to 1e-4, beta2 0.99, 100 warm-up steps, decay 0.1,
/// dropout 0.2 in its sizes).
fn text_gpt(preset: Preset, vocab: usize) -> Recipe {
    let (lr, weight_decay, beta2, warmup, steps) = match preset {
        Preset::Tiny => (0.01, 0.01, 0.999, 50, 1500),
        Preset::Small => (0.001, 0.01, 0.999, 50, 5000),
        Preset::Nanochar => (0.001, 0.1, 0.99, 100, 5000),
    };
    let optimizer = OptimizerConfig {
        rule: Rule::AdamW {
            beta1: 0.9,
            beta2,
            eps: 1e-8,
        },
        lr,
        weight_decay,
        decay: DecayScope::Matrices,
        clip: Some(1.0),
        schedule: Schedule::warmup_cosine(warmup, steps),
    };
    Recipe {
        model: ModelConfig::Gpt(GptConfig::preset(preset, vocab)),
        optimizer,
        batch: if preset == Preset::Nanochar { 64 } else { 32 },
        steps,
    }
}

/// GPT-2's tokens per training window: a quarter of its 1,024 positions, which a paragraph
/// fills and which keeps a step's logits (batch × window × 50,257) to a few hundred MB.
pub const GPT2_WINDOW: usize = 256;
/// GPT-2's windows per step.
const GPT2_BATCH: usize = 8;
/// GPT-2's learning rate: the adapters of a pretrained model need far smaller steps than a
/// character GPT learning from scratch.
const GPT2_LR: f32 = 3e-4;
/// GPT-2's steps: 2.5 M tokens at the batch and window above, a few passes over a long essay;
/// a couple of minutes of a desktop GPU.
pub const GPT2_STEPS: u64 = 1200;
/// The share of a GPT-2 run's steps that warm the learning rate up (the character GPT's 50
/// steps would be most of a short fine-tuning).
const GPT2_WARMUP_SHARE: u64 = 10;

/// The warm-up and cosine decay of a GPT-2 fine-tuning of `steps` steps.
pub fn gpt2_schedule(steps: u64) -> Schedule {
    Schedule::warmup_cosine(steps / GPT2_WARMUP_SHARE, steps)
}

fn invalid(why: String) -> Error {
    Error::Invalid {
        op: "settings",
        why,
    }
}

impl Config {
    /// The defaults of `task` with `family` (None for the task's own) and, for the GPT on
    /// text, a preset (None for tiny). `vocab` is the text's vocabulary size (ignored
    /// elsewhere).
    pub fn defaults(
        task: Task,
        family: Option<Family>,
        preset: Option<Preset>,
        vocab: usize,
    ) -> Result<Config> {
        let family = family.unwrap_or(task.default_family());
        if preset.is_some() && family != Family::Gpt {
            return Err(invalid(format!(
                "a preset sizes a GPT; the {task} task trains a {family}"
            )));
        }
        let recipe = match (family, task) {
            (Family::Mlp, _) if task.point_set().is_some() => points_mlp(),
            (Family::Mlp, Task::Digits) => digits_mlp(),
            (Family::Cnn, Task::Digits) => digits_cnn(),
            (Family::Gpt, Task::Text) => text_gpt(preset.unwrap_or(Preset::Tiny), vocab),
            _ => {
                return Err(invalid(format!(
                    "the {task} task cannot use the model {family}"
                )))
            }
        };
        Ok(Config {
            task,
            model: recipe.model,
            optimizer: recipe.optimizer,
            batch: recipe.batch,
            steps: recipe.steps,
            seed: 0,
            eval_every: 100,
            eval_chars: EVAL_CHARS,
            window: None,
            recompute: false,
            frozen_f16: false,
            noise: 0.05,
        })
    }

    /// LoRA adapters `lora` on a GPT-2 of `sizes` (whose weights are loaded after), trained
    /// on GPT-2's tokens for `steps`: the character GPT's AdamW, clipping and decay, with
    /// GPT-2's window, batch, learning rate and schedule.
    pub fn gpt2_lora(sizes: &GptConfig, lora: LoraConfig, steps: u64) -> Result<Config> {
        let mut config = Config::defaults(Task::Text, Some(Family::Gpt), None, sizes.vocab)?;
        config.model = ModelConfig::Gpt(GptConfig {
            lora: Some(lora),
            dropout: 0.0,
            ..sizes.clone()
        });
        config.window = Some(GPT2_WINDOW.min(sizes.context));
        config.batch = GPT2_BATCH;
        config.optimizer.lr = GPT2_LR;
        config.steps = steps;
        config.optimizer.schedule = gpt2_schedule(steps);
        Ok(config)
    }

    /// Sets the run's step count, with the schedule ending there.
    pub fn set_steps(&mut self, steps: u64) {
        self.steps = steps;
        self.optimizer.schedule = self.optimizer.schedule.ending_at(steps);
    }

    /// Tokens per window of a GPT's text (the window set, else its context); None for the
    /// other models.
    pub fn text_window(&self) -> Option<usize> {
        match &self.model {
            ModelConfig::Gpt(g) => Some(self.window.unwrap_or(g.context)),
            _ => None,
        }
    }

    /// Checks everything a user can set, with a sentence for the first problem.
    pub fn check(&self) -> Result<()> {
        if let (Some(w), ModelConfig::Gpt(g)) = (self.window, &self.model) {
            if w == 0 || w > g.context {
                return Err(invalid(format!(
                    "a training window of {w} tokens does not fit the model's context of {} (1 to {0})",
                    g.context
                )));
            }
        }
        if self.batch == 0 {
            return Err(invalid("the batch size must be at least 1".into()));
        }
        if self.eval_every == 0 {
            return Err(invalid(
                "evaluation must happen at least every so many steps (not 0)".into(),
            ));
        }
        if self.eval_chars == 0 {
            return Err(invalid(
                "a text evaluation must predict at least 1 character".into(),
            ));
        }
        self.optimizer.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naming_the_recipe_s_own_rule_keeps_its_settings() {
        let config = Config::defaults(Task::Text, None, Some(Preset::Nanochar), 84).unwrap();
        let beta2 = |o: &OptimizerConfig| match o.rule {
            Rule::AdamW { beta2, .. } | Rule::Adam { beta2, .. } => Some(beta2),
            Rule::Sgd { .. } => None,
        };
        let mut same = config.optimizer.clone();
        same.use_rule(RuleKind::AdamW);
        assert_eq!(beta2(&same), Some(0.99), "nanochar's own beta2 stays");
        let mut other = config.optimizer.clone();
        other.use_rule(RuleKind::Adam);
        assert_eq!(other.rule, RuleKind::Adam.defaults());
    }

    #[test]
    fn a_run_of_its_own_length_ends_its_schedule_there() {
        let mut config = Config::defaults(Task::Text, None, Some(Preset::Small), 65).unwrap();
        let half = config.steps / 2;
        let Schedule::WarmupCosine { min_ratio, .. } = config.optimizer.schedule else {
            panic!("the GPT's recipe warms up, then decays");
        };
        let before = config.optimizer.schedule.factor(half);
        assert!(before > 0.5, "half-way through the preset's run: {before}");
        config.set_steps(half);
        assert_eq!(config.steps, half);
        let after = config.optimizer.schedule.factor(half);
        assert!((after - min_ratio).abs() < 1e-6, "{after} at the run's end");
    }
}
