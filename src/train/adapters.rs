//! What LoRA fine-tuning leaves: the adapters alone, as PyTorch's PEFT saves them
//! (adapter_model.safetensors), and the merged model, W + s·B·A in every adapted projection,
//! a plain checkpoint that anything loading our checkpoints can use. A GPT-2's files take
//! Hugging Face's names: PEFT's adapters of transformers' GPT-2, and its `model.safetensors`.

use super::checkpoint::{insert_tokenizer, serialize};
use super::hf_gpt2::{hf_config_json, hf_name, hf_safetensors};
use super::{Config, ModelConfig, Session};
use crate::data::Tokenizer;
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
            .map(|(n, t)| (self.peft_name(n), t.clone()))
            .collect();
        let mut meta = HashMap::from([("format".to_string(), "pt".to_string())]);
        meta.insert("adapter_config".into(), peft);
        if let Some(t) = self.text() {
            insert_tokenizer(&mut meta, &t.tokenizer)?;
        }
        serialize(named.iter(), meta).await
    }

    /// Whether the session's GPT reads GPT-2's tokens: a GPT-2, whose files take Hugging
    /// Face's names.
    pub fn is_gpt2(&self) -> bool {
        self.text().is_some_and(|t| t.tokenizer == Tokenizer::Gpt2)
    }

    /// PEFT's name of one of our adapter's matrices.
    fn peft_name(&self, ours: &str) -> String {
        match self.is_gpt2() {
            true => format!("{PEFT_PREFIX}transformer.{}", hf_name(ours).0),
            false => format!("{PEFT_PREFIX}{ours}"),
        }
    }

    /// The adapters' settings as PEFT's adapter_config.json holds them, for PEFT to load
    /// the adapters with. Our own GPT's projections are torch.nn.Linear's, weights [out, in];
    /// GPT-2's are transformers' Conv1D, weights [in, out]: "fan in, fan out" to PEFT (its
    /// lora_A and lora_B are [r, in] and [out, r] either way).
    pub fn peft_config(&self) -> Result<String> {
        let lora = self.config.model.lora().ok_or_else(no_adapters)?;
        let gpt2 = self.is_gpt2();
        let targets: &[&str] = match gpt2 {
            true => &["c_attn", "c_proj", "c_fc"],
            false => &["attn.qkv", "attn.proj", "mlp.fc", "mlp.proj"],
        };
        let mut peft = serde_json::json!({
            "peft_type": "LORA",
            "r": lora.rank,
            "lora_alpha": lora.alpha,
            "lora_dropout": 0.0,
            "bias": "none",
            "fan_in_fan_out": gpt2,
            "inference_mode": true,
            "use_rslora": false,
            "target_modules": targets,
        });
        // transformers' GPT-2 loads as PEFT's causal language model; our GPT is no
        // transformers model.
        if gpt2 {
            peft["task_type"] = "CAUSAL_LM".into();
        }
        Ok(peft.to_string())
    }

    /// The model with each adapter merged into its weight (W + s·B·A), as a checkpoint of the
    /// same GPT without LoRA: its config has no adapters and it holds no optimizer state. A
    /// GPT-2's is Hugging Face's `model.safetensors` (its config.json: `merged_config_json`).
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
                (Some(a), Some(b)) => w.to_f32()?.add(&b.matmul(a)?.scale(scale)?)?,
                // Read back as f32 as it is written: widened here, a table of GPT-2's would be
                // a second copy, larger than a binding.
                _ => w.clone(),
            };
            merged.push((name.clone(), value));
        }
        if self.is_gpt2() {
            return hf_safetensors(&merged).await;
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

    /// The config.json beside a GPT-2's merged model (None for other models, whose
    /// checkpoints hold their own settings).
    pub fn merged_config_json(&self) -> Option<String> {
        let ModelConfig::Gpt(g) = &self.config.model else {
            return None;
        };
        let plain = crate::nn::GptConfig {
            lora: None,
            dropout: 0.0,
            ..g.clone()
        };
        self.is_gpt2().then(|| hf_config_json(&plain))
    }
}
