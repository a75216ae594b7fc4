//! GPT-2 checkpoints as Hugging Face publishes them (`model.safetensors` of
//! openai-community/gpt2, distilgpt2, gpt2-medium, …, with `config.json` beside it): read into
//! our GPT, and our GPT written so. The model is ours already (learned positions, pre-norm
//! blocks, LayerNorm with eps 1e-5, GELU's tanh form, biases everywhere, the output tied to the
//! token embedding); only names and one layout differ: GPT-2's projections are `Conv1D`s,
//! their weights stored [in, out] where ours are [out, in].

use super::checkpoint::{assign_all, values_in, write_f32, NamedTensors, MAX_HEADER_BYTES};
use crate::nn::{Gpt, GptConfig, Module, Norm};
use crate::{Error, Result};
use safetensors::{tensor::TensorView, Dtype, SafeTensors};
use std::collections::HashMap;

/// A head's width in every GPT-2 (124M's 768 / 12 to 1.5B's 1600 / 25): the heads of a file
/// without its config.json.
const HEAD_WIDTH: usize = 64;
/// Our names of a block's projections and Hugging Face's, which store their weights [in, out].
pub(super) const PROJECTIONS: [(&str, &str); 4] = [
    ("attn.qkv", "attn.c_attn"),
    ("attn.proj", "attn.c_proj"),
    ("mlp.fc", "mlp.c_fc"),
    ("mlp.proj", "mlp.c_proj"),
];
/// Our names of a block's norms and Hugging Face's.
const NORMS: [(&str, &str); 2] = [("ln1", "ln_1"), ("ln2", "ln_2")];

fn bad(why: impl Into<String>) -> Error {
    Error::Invalid {
        op: "GPT-2 checkpoint",
        why: why.into(),
    }
}

/// A GPT-2 file read: its sizes and its weights under our names, in our layout.
pub struct HfGpt2 {
    pub config: GptConfig,
    pub tensors: NamedTensors,
}

/// Whether a safetensors file's names are GPT-2's in Hugging Face's layout.
pub fn is_hf_gpt2(bytes: &[u8]) -> bool {
    SafeTensors::read_metadata(bytes).is_ok_and(|(_, meta)| {
        let names = meta.tensors();
        names.contains_key("wte.weight") || names.contains_key("transformer.wte.weight")
    })
}

impl HfGpt2 {
    /// Reads `model.safetensors` (F32, F16 or BF16) and, where given, its `config.json`: the
    /// sizes come from the weights' shapes, the heads from the config (else 64 wide each).
    pub fn parse(bytes: &[u8], config_json: Option<&str>) -> Result<HfGpt2> {
        let (header, _) = SafeTensors::read_metadata(bytes)
            .map_err(|e| bad(format!("this is not a safetensors file ({e})")))?;
        if header as u64 > MAX_HEADER_BYTES {
            return Err(bad(format!(
                "its header is {header} bytes, more than a model needs"
            )));
        }
        let st = SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("the safetensors file is damaged ({e})")))?;
        let mut theirs = HashMap::new();
        for (name, view) in st.tensors() {
            let name = name
                .strip_prefix("transformer.")
                .unwrap_or(&name)
                .to_string();
            // The attention's causal masks, kept as buffers by older exports.
            if name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") {
                continue;
            }
            theirs.insert(name, (view.shape().to_vec(), floats(&view)?));
        }
        let config = sizes(&theirs, config_json)?;
        let tensors = ours(theirs, &config)?;
        Ok(HfGpt2 { config, tensors })
    }
}

/// A tensor's values as f32, from F32, F16 or BF16.
pub(super) fn floats(view: &TensorView) -> Result<Vec<f32>> {
    let data = view.data();
    let values: Vec<f32> = match view.dtype() {
        Dtype::F32 => data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect(),
        Dtype::F16 => data
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        Dtype::BF16 => data
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        other => {
            return Err(bad(format!(
                "its weights are {other:?}; F32, F16 or BF16 load"
            )))
        }
    };
    if let Some(v) = values.iter().find(|v| !v.is_finite()) {
        return Err(bad(format!("a weight holds {v}")));
    }
    Ok(values)
}

/// The model's sizes from the shapes of `wte` (vocabulary × width), `wpe` (context × width)
/// and the blocks counted, checked against `config.json` where given.
fn sizes(theirs: &NamedTensors, config_json: Option<&str>) -> Result<GptConfig> {
    let shape = |name: &str| {
        theirs
            .get(name)
            .map(|(s, _)| s.clone())
            .ok_or_else(|| bad(format!("{name} is missing")))
    };
    let (wte, wpe) = (shape("wte.weight")?, shape("wpe.weight")?);
    let (vocab, width, context) = match (&wte[..], &wpe[..]) {
        ([v, w], [p, w2]) if w == w2 => (*v, *w, *p),
        _ => {
            return Err(bad(format!(
                "wte {wte:?} and wpe {wpe:?} disagree on the width"
            )))
        }
    };
    let layers = (0..)
        .take_while(|i| theirs.contains_key(&format!("h.{i}.ln_1.weight")))
        .count();
    let mut heads = width / HEAD_WIDTH;
    if let Some(text) = config_json {
        let c: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| bad(format!("config.json does not read ({e})")))?;
        let given = |key: &str| c.get(key).and_then(|v| v.as_u64()).map(|v| v as usize);
        for (key, ours) in [
            ("vocab_size", vocab),
            ("n_embd", width),
            ("n_layer", layers),
            ("n_positions", context),
        ] {
            if given(key).is_some_and(|v| v != ours) {
                return Err(bad(format!(
                    "config.json gives {key} {}, the weights {ours}",
                    given(key).unwrap_or(0)
                )));
            }
        }
        heads = given("n_head").unwrap_or(heads);
        let activation = c.get("activation_function").and_then(|v| v.as_str());
        if activation.is_some_and(|a| a != "gelu_new" && a != "gelu_pytorch_tanh") {
            return Err(bad(format!(
                "its activation is {activation:?}; GPT-2's is GELU's tanh form (\"gelu_new\")"
            )));
        }
        // Variants of GPT-2 that our model is not: another MLP width, attention scaled
        // otherwise, an output layer of its own.
        let flag = |key: &str| c.get(key).and_then(|v| v.as_bool());
        let inner = given("n_inner");
        let unlike = [
            ("n_inner", inner.is_some_and(|n| n != 4 * width)),
            (
                "scale_attn_weights",
                flag("scale_attn_weights") == Some(false),
            ),
            (
                "scale_attn_by_inverse_layer_idx",
                flag("scale_attn_by_inverse_layer_idx") == Some(true),
            ),
            (
                "tie_word_embeddings",
                flag("tie_word_embeddings") == Some(false),
            ),
        ];
        if let Some((key, _)) = unlike.iter().find(|(_, differs)| *differs) {
            return Err(bad(format!(
                "config.json's {key} makes it a variant of GPT-2 this model is not"
            )));
        }
        let eps = c.get("layer_norm_epsilon").and_then(|v| v.as_f64());
        if eps.is_some_and(|e| (e - 1e-5).abs() > 1e-12) {
            return Err(bad(format!(
                "its LayerNorm eps is {eps:?}; GPT-2's is 1e-5"
            )));
        }
    }
    if layers == 0 || heads == 0 || !width.is_multiple_of(heads) {
        return Err(bad(format!(
            "{layers} blocks of width {width} in {heads} heads is no GPT-2"
        )));
    }
    Ok(GptConfig {
        vocab,
        context,
        layers,
        heads,
        width,
        dropout: 0.0,
        norm: Norm::Layernorm,
        lora: None,
    })
}

/// Hugging Face's tensors under our names, the projections' weights turned [out, in]; a tensor
/// that belongs nowhere, or an output layer not tied to the embedding, is refused.
fn ours(mut theirs: NamedTensors, config: &GptConfig) -> Result<NamedTensors> {
    let mut out = HashMap::new();
    let mut take = |from: &str, to: String, transpose: bool| -> Result<()> {
        let (shape, values) = theirs
            .remove(from)
            .ok_or_else(|| bad(format!("{from} is missing")))?;
        let moved = match (transpose, &shape[..]) {
            (true, [rows, cols]) => (vec![*cols, *rows], transposed(&values, *rows, *cols)),
            _ => (shape, values),
        };
        out.insert(to, moved);
        Ok(())
    };
    take("wte.weight", "tok_emb.weight".into(), false)?;
    take("wpe.weight", "pos_emb.weight".into(), false)?;
    for part in ["weight", "bias"] {
        take(&format!("ln_f.{part}"), format!("ln_f.{part}"), false)?;
    }
    for i in 0..config.layers {
        for (ours, hf) in NORMS {
            for part in ["weight", "bias"] {
                take(
                    &format!("h.{i}.{hf}.{part}"),
                    format!("blocks.{i}.{ours}.{part}"),
                    false,
                )?;
            }
        }
        for (ours, hf) in PROJECTIONS {
            take(
                &format!("h.{i}.{hf}.weight"),
                format!("blocks.{i}.{ours}.weight"),
                true,
            )?;
            take(
                &format!("h.{i}.{hf}.bias"),
                format!("blocks.{i}.{ours}.bias"),
                false,
            )?;
        }
    }
    if let Some((_, head)) = theirs.remove("lm_head.weight") {
        if head != out["tok_emb.weight"].1 {
            return Err(bad(
                "its output layer is not tied to its token embedding, which GPT-2's is",
            ));
        }
    }
    if let Some(name) = theirs.keys().min() {
        return Err(bad(format!("{name} belongs to no part of GPT-2")));
    }
    Ok(out)
}

/// A [rows, cols] matrix's values as [cols, rows].
fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = values[r * cols + c];
        }
    }
    out
}

/// Hugging Face's name of one of our parameters (or of a LoRA adapter's matrix: PEFT's names
/// under Hugging Face's), and whether its weight is stored transposed.
pub(super) fn hf_name(ours: &str) -> (String, bool) {
    let renamed = match ours {
        "tok_emb.weight" => return ("wte.weight".into(), false),
        "pos_emb.weight" => return ("wpe.weight".into(), false),
        n => n.replacen("blocks.", "h.", 1),
    };
    for (o, h) in NORMS {
        if let Some(at) = renamed.find(&format!(".{o}.")) {
            return (
                format!("{}.{h}.{}", &renamed[..at], &renamed[at + o.len() + 2..]),
                false,
            );
        }
    }
    for (o, h) in PROJECTIONS {
        if let Some(at) = renamed.find(&format!(".{o}.")) {
            let part = &renamed[at + o.len() + 2..];
            return (format!("{}.{h}.{part}", &renamed[..at]), part == "weight");
        }
    }
    (renamed, false)
}

/// `gpt` (without LoRA adapters) as Hugging Face's `model.safetensors` of GPT-2, F32.
pub async fn save_hf(gpt: &Gpt) -> Result<Vec<u8>> {
    if gpt.config.lora.is_some() || gpt.config.norm != Norm::Layernorm {
        return Err(bad(
            "only a GPT with LayerNorm and no adapters is a GPT-2 (merge the adapters first)",
        ));
    }
    hf_safetensors(&gpt.parameters()).await
}

/// A GPT-2's weights under our names as Hugging Face's `model.safetensors`, F32.
pub(super) async fn hf_safetensors(named: &[(String, crate::Tensor)]) -> Result<Vec<u8>> {
    let mut data = Vec::new();
    for (name, t) in named {
        let (hf, transpose) = hf_name(name);
        let mut shape = t.shape().to_vec();
        let mut values = t.to_vec().await?;
        if transpose {
            values = transposed(&values, shape[0], shape[1]);
            shape.swap(0, 1);
        }
        data.push((hf, shape, values));
    }
    let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
    write_f32(data, meta)
}

/// The `config.json` that `transformers` reads `save_hf`'s model with.
pub fn hf_config_json(c: &GptConfig) -> String {
    serde_json::json!({
        "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2",
        "vocab_size": c.vocab,
        "n_positions": c.context,
        "n_embd": c.width,
        "n_layer": c.layers,
        "n_head": c.heads,
        "activation_function": "gelu_new",
        "layer_norm_epsilon": 1e-5,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
        "tie_word_embeddings": true,
    })
    .to_string()
}

/// A GPT-2 file's model, built on `device` with its weights.
pub fn load_hf(file: &HfGpt2, device: &crate::Device) -> Result<Gpt> {
    let gpt = Gpt::new(&file.config, &mut crate::nn::Init::for_loading(device))?;
    let params = gpt.parameters();
    assign_all(&params, &values_in(&file.tensors, &params)?)?;
    Ok(gpt)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::nn::{Init, Model};
    use crate::{Device, Tensor};

    fn small() -> GptConfig {
        GptConfig {
            vocab: 50,
            context: 16,
            layers: 2,
            heads: 2,
            width: 128,
            dropout: 0.0,
            norm: Norm::Layernorm,
            lora: None,
        }
    }

    #[test]
    fn a_gpt_written_as_gpt2_reads_back_the_same_model() {
        let device = Device::Cpu;
        let gpt = Gpt::new(&small(), &mut Init::new(3, &device)).unwrap();
        let bytes = pollster::block_on(save_hf(&gpt)).unwrap();
        assert!(is_hf_gpt2(&bytes));
        let names: Vec<String> = SafeTensors::deserialize(&bytes)
            .unwrap()
            .names()
            .into_iter()
            .map(str::to_string)
            .collect();
        for name in [
            "wte.weight",
            "h.1.attn.c_attn.weight",
            "h.0.ln_2.bias",
            "h.1.mlp.c_proj.bias",
            "ln_f.weight",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
        }
        let file = HfGpt2::parse(&bytes, Some(&hf_config_json(&small()))).unwrap();
        assert_eq!(file.config, small());
        // A projection is stored [in, out]: c_attn of width 128 is [128, 384].
        let st = SafeTensors::deserialize(&bytes).unwrap();
        assert_eq!(
            st.tensor("h.0.attn.c_attn.weight").unwrap().shape(),
            [128, 384]
        );
        let back = load_hf(&file, &device).unwrap();
        let tokens =
            Tensor::from_u32((0..10).map(|i| i * 3 % 50).collect(), &[1, 10], &device).unwrap();
        let logits = |g: &Gpt| pollster::block_on(g.forward(&tokens).unwrap().to_vec()).unwrap();
        // The same to f32's rounding: the CPU backend holds its weights in f64.
        let (a, b) = (logits(&gpt), logits(&back));
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(
            a.len() == b.len() && worst < 1e-5,
            "logits differ by {worst}"
        );
        // The heads come from the width where no config.json is given: 128 / 64.
        assert_eq!(HfGpt2::parse(&bytes, None).unwrap().config.heads, 2);
        assert_eq!(file.tensors["ln_f.bias"].1.len(), 128);
    }

    #[test]
    fn a_file_that_is_not_gpt2_is_refused_with_its_reason() {
        let device = Device::Cpu;
        let gpt = Gpt::new(&small(), &mut Init::new(3, &device)).unwrap();
        let bytes = pollster::block_on(save_hf(&gpt)).unwrap();
        let reason = |config: &str| match HfGpt2::parse(&bytes, Some(config)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{config} accepted"),
        };
        let mut config: serde_json::Value =
            serde_json::from_str(&hf_config_json(&small())).unwrap();
        config["n_layer"] = 3.into();
        assert!(reason(&config.to_string()).contains("n_layer 3, the weights 2"));
        config["n_layer"] = 2.into();
        config["activation_function"] = "relu".into();
        assert!(reason(&config.to_string()).contains("GELU"));
        config["activation_function"] = "gelu_new".into();
        config["tie_word_embeddings"] = false.into();
        assert!(reason(&config.to_string()).contains("tie_word_embeddings"));
        assert!(HfGpt2::parse(b"not a model", None).is_err());
    }
}
