//! The train and sample commands' flags, as clap parses them and --help explains them.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use std::str::FromStr;
use strum::VariantNames;
use webgrad::nn::{Norm, Preset};
use webgrad::optim::RuleKind;
use webgrad::train::{Family, Task};

/// Parses a flag as one of a settings enum's names, which --help lists.
fn named<T>() -> impl TypedValueParser<Value = T>
where
    T: VariantNames + FromStr<Err = strum::ParseError> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(T::VARIANTS).try_map(|name| name.parse::<T>())
}

/// A whole number of 0 or more. Negative numbers reach this check (each such option allows
/// them), so that `--steps -1` is refused by its own name and reason, not taken for a flag.
fn whole<T: FromStr>(text: &str) -> Result<T, String> {
    if text.trim_start().starts_with('-') {
        return Err("must not be negative".into());
    }
    text.parse()
        .map_err(|_| "must be a whole number (0, 1, 2, …)".into())
}

/// `webgrad train`: a task's defaults, with what the flags change.
#[derive(clap::Args)]
pub struct TrainArgs {
    /// What to learn: a 2-D point set, handwritten digits or text.
    #[arg(long, value_parser = named::<Task>())]
    pub(super) task: Task,
    /// The model family (default: the task's own: mlp for points, cnn for digits, gpt for text).
    #[arg(long, value_parser = named::<Family>())]
    pub(super) model: Option<Family>,
    /// The GPT's size (text only; default tiny).
    #[arg(long, value_parser = named::<Preset>())]
    pub(super) preset: Option<Preset>,
    /// Training steps (default: the task's).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole::<u64>)]
    pub(super) steps: Option<u64>,
    /// Examples per step (default: the task's).
    #[arg(long, value_name = "B", allow_negative_numbers = true, value_parser = whole::<usize>)]
    pub(super) batch: Option<usize>,
    /// Learning rate (default: the task's).
    #[arg(long, value_name = "X", allow_hyphen_values = true)]
    pub(super) lr: Option<f32>,
    /// The update rule (default: the task's, Adam or AdamW).
    #[arg(long, value_parser = named::<RuleKind>())]
    pub(super) optimizer: Option<RuleKind>,
    /// Seed of the initial weights, the data and the batches.
    #[arg(long, value_name = "S", default_value_t = 0, allow_negative_numbers = true, value_parser = whole::<u64>)]
    pub(super) seed: u64,
    /// A UTF-8 text file to train on (text only; default: the built-in Shakespeare).
    #[arg(long, value_name = "FILE")]
    pub(super) text: Option<String>,
    /// Write the weights and settings with the lowest validation loss here (safetensors),
    /// each time an evaluation beats the best so far.
    #[arg(long, value_name = "FILE")]
    pub(super) save: Option<String>,
    /// Write the weights and settings of the last step here (safetensors). The checkpoint of
    /// each evaluation is kept in memory meanwhile, to be written if the GPU device is lost.
    #[arg(long, value_name = "FILE")]
    pub(super) save_last: Option<String>,
    /// Stop after N evaluations in a row without a lower validation loss.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) patience: Option<u32>,
    /// The GPT's dropout probability in training (text only; default: the preset's).
    #[arg(long, value_name = "P")]
    pub(super) dropout: Option<f32>,
    /// The GPT's normalisation (text only; default: layernorm).
    #[arg(long, value_parser = named::<Norm>())]
    pub(super) norm: Option<Norm>,
    /// Destroys the GPU device after step N, as a driver reset would: how the tests check what
    /// a lost device does to a run.
    #[arg(long, value_name = "N", hide = true)]
    pub(super) lose_device_at: Option<u64>,
    /// LoRA: adapters of rank R on the GPT's attention and MLP projections, and only they train
    /// (text only). With --load, the checkpoint's GPT (or a GPT-2 as Hugging Face publishes it,
    /// model.safetensors with its config.json beside it) is the frozen base they adapt: its
    /// sizes are the model's, and the text (--text, or the built-in one) is read with its
    /// tokenizer. GPT-2 defaults to --window 256 --batch 8 --lr 3e-4 --steps 1200.
    #[arg(long, value_name = "R")]
    pub(super) lora_rank: Option<usize>,
    /// LoRA's alpha: the adapters' update is scaled by alpha / rank (default: the rank).
    #[arg(long, value_name = "A", requires = "lora_rank")]
    pub(super) lora_alpha: Option<f32>,
    /// With --lora-rank: at the end, write the adapters alone here, under the names PyTorch's
    /// PEFT gives them (safetensors), and PEFT's adapter_config.json beside it.
    #[arg(long, value_name = "FILE", requires = "lora_rank")]
    pub(super) save_adapters: Option<String>,
    /// With --lora-rank: at the end, write the model with the adapters merged into its
    /// weights here, a checkpoint of the plain GPT (for GPT-2, Hugging Face's model.safetensors,
    /// and its config.json beside it).
    #[arg(long, value_name = "FILE", requires = "lora_rank")]
    pub(super) save_merged: Option<String>,
    /// Start from a checkpoint of the same task and model (or, with --lora-rank, of the model
    /// to fine-tune).
    #[arg(long, value_name = "FILE")]
    pub(super) load: Option<String>,
    /// Tokens in each training window of the GPT (text only; default: its context, 256 for
    /// GPT-2, whose context is 1,024).
    #[arg(long, value_name = "T", allow_negative_numbers = true, value_parser = whole::<usize>)]
    pub(super) window: Option<usize>,
    /// Run a GPT's blocks again in backward rather than keep their activations: less memory
    /// (2.1 GB less for GPT-2 at its defaults, which the page runs so) for a second pass
    /// through the blocks (text only; default: false).
    #[arg(long, value_name = "BOOL")]
    pub(super) recompute: Option<bool>,
    /// Evaluate on the validation split every N steps (default: the task's).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole::<u64>)]
    pub(super) eval_every: Option<u64>,
    /// The products' precision: f32, f16 (operands rounded to f16 and multiplied on the GPU's
    /// matrix units, adding in f32, or where it has none on its f16 arithmetic; weights,
    /// gradients and the optimizer stay f32; refused where the GPU has no shader-f16) or auto
    /// (f16 where it has matrix units). Default: f32.
    #[arg(long, value_name = "f32|f16|auto", default_value = "f32")]
    pub(super) precision: webgrad::gpu::Precision,
}

/// `webgrad sample`: text from a saved GPT.
#[derive(clap::Args)]
pub struct SampleArgs {
    /// A checkpoint saved by `webgrad train --task text --save FILE`, or a GPT-2 as Hugging
    /// Face publishes it (model.safetensors, with its config.json beside it).
    #[arg(long, value_name = "FILE")]
    pub(super) load: String,
    /// With a GPT-2 file as --load: LoRA adapters on it as PEFT saves them
    /// (adapter_model.safetensors, its adapter_config.json beside it).
    #[arg(long, value_name = "FILE")]
    pub(super) adapters: Option<String>,
    /// Text the model continues.
    #[arg(long, default_value = "")]
    pub(super) prompt: String,
    /// Tokens to generate: characters for a character GPT, GPT-2's tokens for GPT-2.
    #[arg(long, value_name = "N", default_value_t = 500, allow_negative_numbers = true, value_parser = whole::<usize>)]
    pub(super) tokens: usize,
    /// Softmax temperature: lower is more predictable.
    #[arg(
        long,
        value_name = "T",
        default_value_t = 0.8,
        allow_negative_numbers = true
    )]
    pub(super) temperature: f32,
    /// Sample among the K likeliest characters only (0: all).
    #[arg(long, value_name = "K", default_value_t = 0, allow_negative_numbers = true, value_parser = whole::<usize>)]
    pub(super) top_k: usize,
    /// Seed of the sampling.
    #[arg(long, value_name = "S", default_value_t = 0, allow_negative_numbers = true, value_parser = whole::<u64>)]
    pub(super) seed: u64,
}
