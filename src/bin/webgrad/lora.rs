//! What a LoRA run (`webgrad train --lora-rank R --load FILE`) adapts: a GPT of ours from its
//! checkpoint, or a GPT-2 as Hugging Face publishes it; the text read with that model's
//! tokenizer; and where the files it leaves go.

use super::commands::{read, SHAKESPEARE};
use super::destination::Destination;
use webgrad::data::{gunzip, text_from_file, Text, Tokenizer};
use webgrad::nn::GptConfig;
use webgrad::optim::ScheduleKind;
use webgrad::train::{
    gpt2_schedule, is_hf_gpt2, Checkpoint, Config, HfGpt2, ModelConfig, Session, GPT2_STEPS,
};

/// The model a LoRA run adapts: its sizes and tokenizer, and the file read, whose weights
/// become the frozen base once the session exists.
pub struct LoraBase {
    pub sizes: GptConfig,
    pub tokenizer: Tokenizer,
    pub file: BaseFile,
}

/// A LoRA base's file, parsed: a checkpoint of ours, or a GPT-2 as Hugging Face publishes it.
pub enum BaseFile {
    Checkpoint(Checkpoint),
    Gpt2(HfGpt2),
}

impl LoraBase {
    pub fn is_gpt2(&self) -> bool {
        matches!(self.file, BaseFile::Gpt2(_))
    }

    /// Its weights as `session`'s frozen base; a checkpoint's note on its optimizer state is
    /// said as any `--load` says it.
    pub fn load_into(&self, session: &mut Session, path: &str) -> Result<(), String> {
        let loaded = match &self.file {
            BaseFile::Checkpoint(ck) => session.load_parsed(ck),
            BaseFile::Gpt2(file) => session.load_gpt2_base(file),
        };
        loaded.map_err(|e| format!("{path}: {}", e.reason()))?;
        if let BaseFile::Checkpoint(ck) = &self.file {
            if let Some(note) = ck.state_note() {
                eprintln!("note: {path}: {note}");
            }
        }
        Ok(())
    }
}

/// Reads the base at `path`.
pub fn lora_base(path: &str) -> Result<LoraBase, String> {
    let bytes = read(path)?;
    if is_hf_gpt2(&bytes) {
        let file = super::gpt2::parse_beside(path, &bytes)?;
        if !Tokenizer::Gpt2.fits(file.config.vocab) {
            return Err(format!(
                "{path}: its vocabulary has {} tokens, fewer than GPT-2's 50,257, so GPT-2's tokenizer cannot write text for it",
                file.config.vocab
            ));
        }
        return Ok(LoraBase {
            sizes: file.config.clone(),
            tokenizer: Tokenizer::Gpt2,
            file: BaseFile::Gpt2(file),
        });
    }
    let ck = Checkpoint::parse(&bytes).map_err(|e| format!("{path}: {}", e.reason()))?;
    match (&ck.config.model, &ck.tokenizer) {
        (ModelConfig::Gpt(g), Some(tokenizer)) if g.lora.is_none() => Ok(LoraBase {
            sizes: g.clone(),
            tokenizer: tokenizer.clone(),
            file: BaseFile::Checkpoint(ck),
        }),
        (ModelConfig::Gpt(_), Some(_)) => Err(format!(
            "{path} already holds LoRA adapters; fine-tune its merged model (--save-merged) instead"
        )),
        _ => Err(format!("{path} holds no text GPT to fine-tune with LoRA")),
    }
}

/// A text file, or the built-in text, read with a model's tokenizer.
pub fn text_for(path: Option<&str>, tokenizer: Tokenizer) -> Result<Text, String> {
    match path {
        Some(path) => text_from_file(&read(path)?)
            .and_then(|s| Text::read_with(&s, tokenizer))
            .map_err(|e| format!("{path}: {}", e.reason())),
        None => gunzip(SHAKESPEARE)
            .and_then(|s| Text::read_with(&s, tokenizer))
            .map_err(|e| e.to_string()),
    }
}

/// The flags a GPT-2 fine-tuning has its own defaults for.
pub struct Gpt2Flags {
    pub window: Option<usize>,
    pub batch: Option<usize>,
    pub lr: Option<f32>,
    pub steps: Option<u64>,
}

/// The run's config made the base's: its sizes, and for GPT-2 its fine-tuning recipe
/// (`Config::gpt2_lora`) where the flags leave it.
pub fn adapt_config(
    config: &mut Config,
    base: &LoraBase,
    dropout: Option<f32>,
    flags: Gpt2Flags,
) -> Result<(), String> {
    let ModelConfig::Gpt(gpt) = &mut config.model else {
        return Ok(());
    };
    let lora = gpt.lora;
    *gpt = GptConfig {
        dropout: dropout.unwrap_or(base.sizes.dropout),
        lora,
        ..base.sizes.clone()
    };
    let (true, Some(lora)) = (base.is_gpt2(), lora) else {
        return Ok(());
    };
    let steps = flags.steps.unwrap_or(GPT2_STEPS);
    let recipe = Config::gpt2_lora(&base.sizes, lora, steps).map_err(|e| e.to_string())?;
    config.window = flags.window.or(recipe.window);
    config.batch = flags.batch.unwrap_or(recipe.batch);
    config.optimizer.lr = flags.lr.unwrap_or(recipe.optimizer.lr);
    config.set_steps(steps);
    if config.optimizer.schedule.kind() == ScheduleKind::Cosine {
        config.optimizer.schedule = gpt2_schedule(steps);
    }
    Ok(())
}

/// A file's path with its name replaced by `name`: the adapter_config.json PEFT reads beside
/// the adapters, the config.json transformers reads beside a model.
pub fn beside(path: &str, name: &str) -> String {
    let path = std::path::Path::new(path).with_file_name(name);
    path.to_string_lossy().into_owned()
}

/// Where the files of a LoRA run go, each checked before training starts.
pub struct LoraFiles {
    pub adapters: Option<Destination>,
    pub peft_config: Option<Destination>,
    pub merged: Option<Destination>,
    /// A GPT-2's config.json beside its merged model.
    pub merged_config: Option<Destination>,
}

impl LoraFiles {
    /// The files asked for; `gpt2`: the merged model is a GPT-2, with a config.json.
    pub fn check(
        adapters: Option<&str>,
        merged: Option<&str>,
        gpt2: bool,
    ) -> Result<LoraFiles, String> {
        let check = |p: Option<String>| p.as_deref().map(Destination::check).transpose();
        Ok(LoraFiles {
            adapters: check(adapters.map(str::to_string))?,
            // PEFT reads an adapter with its adapter_config.json beside it, in the same folder.
            peft_config: check(adapters.map(|a| beside(a, "adapter_config.json")))?,
            merged: check(merged.map(str::to_string))?,
            merged_config: check(merged.filter(|_| gpt2).map(|m| beside(m, "config.json")))?,
        })
    }
}
