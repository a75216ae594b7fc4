//! What LoRA fine-tuning leaves: the adapters alone, as PyTorch's PEFT saves them
//! (adapter_model.safetensors), and the merged model, W + s·B·A in every adapted projection,
//! a plain checkpoint that anything loading our checkpoints can use.

use super::checkpoint::serialize;
use super::{Config, ModelConfig, Session};
use crate::{Error, Result, Tensor};
use std::collections::HashMap;

/// PEFT's prefix for the model's own names in an adapter file.
const PEFT_PREFIX: &str = "base_model.model.";
const ADAPTER_A: &str = ".lora_A.weight";
const ADAPTER_B: &str = ".lora_B.weight";

fn no_adapters() -> Error {
    Error::Invalid {
        op: "lora",
        why: "this model has no LoRA adapters (train with a LoRA rank first)".into(),
    }
}

impl Session {
    /// The adapters alone under PEFT's names (base_model.model.NAME.lora_A.weight, …), with
    /// PEFT's adapter_config.json in the metadata ("adapter_config") and the run's vocabulary.
    pub async fn save_adapters(&self) -> Result<Vec<u8>> {
        let peft = self.peft_config()?;
        let named: Vec<(String, Tensor)> = self
            .params
            .iter()
            .filter(|(n, _)| n.ends_with(ADAPTER_A) || n.ends_with(ADAPTER_B))
            .map(|(n, t)| (format!("{PEFT_PREFIX}{n}"), t.clone()))
            .collect();
        let mut meta = HashMap::from([("format".to_string(), "pt".to_string())]);
        meta.insert("adapter_config".into(), peft);
        if let Some(t) = self.text() {
            let chars = serde_json::to_string(&t.vocab.chars).map_err(|e| bad(e.to_string()))?;
            meta.insert("vocab".into(), chars);
        }
        serialize(named.iter(), meta).await
    }

    /// The adapters' settings as PEFT's adapter_config.json holds them, for PEFT to load
    /// the adapters with (weights stored [out, in] as torch.nn.Linear's: not fan-in-fan-out).
    pub fn peft_config(&self) -> Result<String> {
        let lora = self.config.model.lora().ok_or_else(no_adapters)?;
        let peft = serde_json::json!({
            "peft_type": "LORA",
            "r": lora.rank,
            "lora_alpha": lora.alpha,
            "lora_dropout": 0.0,
            "bias": "none",
            "fan_in_fan_out": false,
            "inference_mode": true,
            "use_rslora": false,
            "target_modules": ["attn.qkv", "attn.proj", "mlp.fc", "mlp.proj"],
        });
        Ok(peft.to_string())
    }

    /// The model with each adapter merged into its weight (W + s·B·A), as a checkpoint of the
    /// same GPT without LoRA: its config has no adapters and it holds no optimizer state.
    pub async fn save_merged(&self) -> Result<Vec<u8>> {
        let lora = self.config.model.lora().ok_or_else(no_adapters)?;
        let scale = lora.alpha / lora.rank as f32;
        let adapter = |name: &str| self.params.iter().find(|(n, _)| n == name).map(|p| &p.1);
        let mut merged = Vec::with_capacity(self.frozen.len());
        for (name, w) in &self.frozen {
            let layer = name.strip_suffix(".weight").unwrap_or(name);
            let pair = (
                adapter(&format!("{layer}{ADAPTER_A}")),
                adapter(&format!("{layer}{ADAPTER_B}")),
            );
            let value = match pair {
                (Some(a), Some(b)) => w.add(&b.matmul(a)?.scale(scale)?)?,
                _ => w.clone(),
            };
            merged.push((name.clone(), value));
        }
        let mut config: Config = self.config.clone();
        if let ModelConfig::Gpt(g) = &mut config.model {
            g.lora = None;
        }
        // A new plain model: its step and its optimizer's start at 0.
        let mut meta = self.metadata(&config, 0)?;
        meta.insert("step".into(), "0".into());
        serialize(merged.iter(), meta).await
    }
}

fn bad(why: String) -> Error {
    Error::Invalid { op: "lora", why }
}
