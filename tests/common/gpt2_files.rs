//! GPT-2 files as Hugging Face publishes them, written for the tests.

use webgrad::nn::{Gpt, GptConfig, Init, Module, Norm};
use webgrad::train::{hf_config_json, save_hf};
use webgrad::Device;

/// A one-block GPT of width 64 over `vocab` tokens, written as model.safetensors and
/// config.json in a folder of its own; the folder.
pub fn written(vocab: usize, name: &str) -> std::path::PathBuf {
    written_scaled(vocab, name, 1.0)
}

/// As `written`, its token embedding (the output layer too, tied) `scale` times its initial
/// size: GPT-2's own has rows far longer than a new model's 0.02 per value, and a model whose
/// frozen output layer is that small cannot give any token much more than another.
pub fn written_scaled(vocab: usize, name: &str, scale: f32) -> std::path::PathBuf {
    written_sized((vocab, 64), name, scale)
}

/// As `written_scaled`, `width` wide (a head every 64).
pub fn written_sized((vocab, width): (usize, usize), name: &str, scale: f32) -> std::path::PathBuf {
    let config = GptConfig {
        vocab,
        context: 64,
        layers: 1,
        heads: width.div_ceil(64),
        width,
        dropout: 0.0,
        norm: Norm::Layernorm,
        lora: None,
    };
    let gpt = Gpt::new(&config, &mut Init::new(5, &Device::Cpu)).unwrap();
    let (_, embedding) = &gpt.parameters()[0];
    let scaled: Vec<f32> = pollster::block_on(embedding.to_vec()).unwrap();
    let scaled: Vec<f32> = scaled.iter().map(|v| v * scale).collect();
    embedding.assign(&scaled).unwrap();
    let dir = std::env::temp_dir().join(format!("webgrad-gpt2-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = pollster::block_on(save_hf(&gpt)).unwrap();
    std::fs::write(dir.join("model.safetensors"), bytes).unwrap();
    std::fs::write(dir.join("config.json"), hf_config_json(&config)).unwrap();
    dir
}
