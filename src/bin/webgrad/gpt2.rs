//! `webgrad sample --load model.safetensors` on a GPT-2 checkpoint as Hugging Face publishes
//! it (webgrad::train::HfGpt2), its `config.json` read from beside it where there is one, the
//! text through GPT-2's tokenizer.

use super::commands::{device, print_sample};
use webgrad::data::{Gpt2Tokens, Tokens};
use webgrad::nn::GptConfig;
use webgrad::train::{
    load_hf, load_hf_adapted, Config, Footprint, HfGpt2, ModelConfig, PeftAdapters, SampleSettings,
    Task,
};
use webgrad::Result;

/// Samples `settings` from the GPT-2 file at `path` (its `bytes`), written as it comes.
pub fn sample_gpt2(
    path: &str,
    bytes: &[u8],
    adapters: Option<&str>,
    settings: SampleSettings,
) -> std::result::Result<(), String> {
    let file = parse_beside(path, bytes)?;
    let device = device()?;
    // Check the whole model's size before building any of it.
    footprint(&file.config)
        .and_then(|f| f.check(&device))
        .map_err(|e| format!("{path}: {}", e.reason()))?;
    let tokenizer = Gpt2Tokens::shared().map_err(|e| e.to_string())?;
    let prompt = tokenizer.encode(&settings.prompt);
    if let Some(t) = prompt.iter().find(|&&t| t as usize >= file.config.vocab) {
        return Err(format!(
            "the prompt's token {t} is outside this model's vocabulary of {} (GPT-2's has 50,257)",
            file.config.vocab
        ));
    }
    let gpt = match adapters {
        Some(at) => load_hf_adapted(&file, &read_adapters(at)?, &device)
            .map_err(|e| format!("{at}: {}", e.reason()))?,
        None => load_hf(&file, &device).map_err(|e| format!("{path}: {}", e.reason()))?,
    };
    let within = Within {
        tokenizer,
        vocab: file.config.vocab,
    };
    print_sample(&gpt, &within, &settings)
}

/// The GPT-2 file at `path` (its `bytes`), with the config.json beside it where there is one.
pub fn parse_beside(path: &str, bytes: &[u8]) -> std::result::Result<HfGpt2, String> {
    let config_json = std::fs::read_to_string(super::lora::beside(path, "config.json")).ok();
    HfGpt2::parse(bytes, config_json.as_deref()).map_err(|e| format!("{path}: {}", e.reason()))
}

/// PEFT's adapters at `path`, with the adapter_config.json beside them.
fn read_adapters(path: &str) -> std::result::Result<PeftAdapters, String> {
    let config_path = super::lora::beside(path, "adapter_config.json");
    let config = std::fs::read_to_string(&config_path)
        .map_err(|e| format!("cannot read {config_path}, which PEFT writes beside {path}: {e}"))?;
    PeftAdapters::parse(&super::commands::read(path)?, &config)
        .map_err(|e| format!("{path}: {}", e.reason()))
}

/// The memory of the model alone, as a text run of it with a batch of one would need, its
/// weights only read.
fn footprint(config: &GptConfig) -> Result<Footprint> {
    let mut run = Config::defaults(Task::Text, None, None, config.vocab)?;
    run.model = ModelConfig::Gpt(config.clone());
    run.batch = 1;
    Ok(Footprint::of(&run).read_only())
}

/// GPT-2's tokenizer for a model of `vocab` tokens: one with fewer than GPT-2's (a small test
/// model) starts an empty prompt from token 0 instead of "<|endoftext|>".
struct Within<'a> {
    tokenizer: &'a Gpt2Tokens,
    vocab: usize,
}

impl Tokens for Within<'_> {
    fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Tokens::encode(self.tokenizer, text)
    }
    fn token_bytes(&self, token: u32) -> Vec<u8> {
        self.tokenizer.token_bytes(token)
    }
    fn start(&self) -> u32 {
        match self.tokenizer.start() {
            t if (t as usize) < self.vocab => t,
            _ => 0,
        }
    }
}
