//! LoRA adapters of transformers' GPT-2 as PyTorch's PEFT saves them (adapter_model.safetensors
//! with adapter_config.json), read back onto a GPT-2 file: the adapters webgrad exports, or
//! those trained in PyTorch. PEFT's settings that our adapters cannot express (DoRA, biases of
//! their own, a rank or alpha per module) are refused with their name.

use super::checkpoint::{assign_all, values_in, NamedTensors};
use super::hf_gpt2::{floats, HfGpt2, PROJECTIONS};
use crate::nn::{Gpt, LoraConfig, Module};
use crate::{Error, Result};
use safetensors::SafeTensors;
use serde_json::Value;

/// The prefix of PEFT's names of a GPT-2's adapters.
const PREFIX: &str = "base_model.model.transformer.";

fn bad(why: impl Into<String>) -> Error {
    Error::Invalid {
        op: "LoRA adapters",
        why: why.into(),
    }
}

/// Adapters read: their rank and scale, and their matrices under our names.
pub struct PeftAdapters {
    pub lora: LoraConfig,
    pub tensors: NamedTensors,
}

impl PeftAdapters {
    /// Reads PEFT's adapter file and its adapter_config.json.
    pub fn parse(bytes: &[u8], config_json: &str) -> Result<PeftAdapters> {
        let lora = settings(config_json)?;
        let st = SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("this is not a safetensors file ({e})")))?;
        let mut tensors = NamedTensors::new();
        for (name, view) in st.tensors() {
            let ours = our_name(&name)
                .ok_or_else(|| bad(format!("{name} is no adapter of a GPT-2 projection")))?;
            tensors.insert(ours, (view.shape().to_vec(), floats(&view)?));
        }
        if tensors.is_empty() {
            return Err(bad("the file holds no adapters"));
        }
        Ok(PeftAdapters { lora, tensors })
    }
}

/// The rank and scale of adapter_config.json, refused where PEFT's adapters would compute
/// something ours do not.
fn settings(config_json: &str) -> Result<LoraConfig> {
    let c: Value = serde_json::from_str(config_json)
        .map_err(|e| bad(format!("adapter_config.json does not read ({e})")))?;
    if c.get("peft_type").and_then(Value::as_str) != Some("LORA") {
        return Err(bad(
            "adapter_config.json is not of LoRA (peft_type \"LORA\")",
        ));
    }
    let flag = |key: &str| c.get(key).and_then(Value::as_bool).unwrap_or(false);
    let set = |key: &str| {
        c.get(key)
            .and_then(Value::as_object)
            .is_some_and(|o| !o.is_empty())
    };
    let unlike = [
        ("use_dora", flag("use_dora")),
        ("lora_bias", flag("lora_bias")),
        ("rank_pattern", set("rank_pattern")),
        ("alpha_pattern", set("alpha_pattern")),
        (
            "bias",
            c.get("bias")
                .and_then(Value::as_str)
                .is_some_and(|b| b != "none"),
        ),
    ];
    if let Some((key, _)) = unlike.iter().find(|(_, differs)| *differs) {
        return Err(bad(format!(
            "adapter_config.json's {key} asks for adapters webgrad does not compute"
        )));
    }
    let rank = c.get("r").and_then(Value::as_u64).unwrap_or(0) as usize;
    let alpha = c.get("lora_alpha").and_then(Value::as_f64).unwrap_or(8.0) as f32;
    if rank == 0 {
        return Err(bad("adapter_config.json gives no rank r"));
    }
    // rsLoRA scales by α / √r where LoRA scales by α / r: the same as LoRA with α·√r.
    let alpha = match flag("use_rslora") {
        true => alpha * (rank as f32).sqrt(),
        false => alpha,
    };
    Ok(LoraConfig { rank, alpha })
}

/// Our name of PEFT's `base_model.model.transformer.h.N.attn.c_attn.lora_A.weight`.
fn our_name(peft: &str) -> Option<String> {
    let rest = peft.strip_prefix(PREFIX)?.strip_prefix("h.")?;
    let (block, rest) = rest.split_once('.')?;
    let block: usize = block.parse().ok()?;
    let (module, matrix) = rest.rsplit_once(".lora_")?;
    let (ours, _) = PROJECTIONS.iter().find(|(_, hf)| *hf == module)?;
    matches!(matrix, "A.weight" | "B.weight")
        .then(|| format!("blocks.{block}.{ours}.lora_{matrix}"))
}

/// A GPT-2 file's model with `adapters` on it. A projection PEFT left alone (target_modules
/// without it) gets adapters of zeros: no change.
pub fn load_hf_adapted(
    file: &HfGpt2,
    adapters: &PeftAdapters,
    device: &crate::Device,
) -> Result<Gpt> {
    let mut config = file.config.clone();
    config.lora = Some(adapters.lora);
    let gpt = Gpt::new(&config, &mut crate::nn::Init::for_loading(device))?;
    let params = gpt.parameters();
    let (adapter, base): (Vec<_>, Vec<_>) =
        params.into_iter().partition(|(n, _)| n.contains(".lora_"));
    let mut named = adapters.tensors.clone();
    for (name, t) in &adapter {
        named
            .entry(name.clone())
            .or_insert_with(|| (t.shape().to_vec(), vec![0.0; t.numel()]));
    }
    if let Some(name) = named.keys().find(|n| !adapter.iter().any(|(a, _)| a == *n)) {
        return Err(bad(format!("{name} adapts no projection of this model")));
    }
    let base_values = values_in(&file.tensors, &base)?;
    let adapter_values = values_in(&named, &adapter)?;
    assign_all(&base, &base_values)?;
    assign_all(&adapter, &adapter_values)?;
    Ok(gpt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peft_names_map_to_ours() {
        assert_eq!(
            our_name("base_model.model.transformer.h.11.mlp.c_proj.lora_B.weight").as_deref(),
            Some("blocks.11.mlp.proj.lora_B.weight")
        );
        assert_eq!(
            our_name("base_model.model.transformer.h.0.attn.c_attn.weight"),
            None
        );
        assert_eq!(our_name("transformer.h.0.attn.c_attn.lora_A.weight"), None);
    }

    #[test]
    fn settings_ours_cannot_compute_are_refused_by_name() {
        let with = |extra: &str| {
            settings(&format!(
                r#"{{"peft_type": "LORA", "r": 4, "lora_alpha": 8{extra}}}"#
            ))
        };
        assert_eq!(
            with("").unwrap(),
            LoraConfig {
                rank: 4,
                alpha: 8.0
            }
        );
        assert_eq!(with(r#", "use_rslora": true"#).unwrap().alpha, 16.0);
        let e = with(r#", "use_dora": true"#).unwrap_err().to_string();
        assert!(e.contains("use_dora"), "{e}");
        let e = with(r#", "rank_pattern": {"c_attn": 8}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rank_pattern"), "{e}");
        assert!(settings(r#"{"peft_type": "IA3"}"#).is_err());
    }
}
