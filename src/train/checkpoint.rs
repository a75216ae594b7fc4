//! Checkpoints as safetensors: weights under their PyTorch names, optimizer state under
//! "optimizer.{name}.{slot}", and the config, step and tokenizer in the metadata. Files are
//! untrusted: everything is checked before anything is changed.

use super::{Config, ModelConfig, Session};
use crate::data::{Tokenizer, Vocab};
use crate::{Error, Result, Tensor};
use safetensors::{tensor::TensorView, Dtype, SafeTensors};
use std::collections::HashMap;

/// The value of the "format" metadata key.
pub const CHECKPOINT_FORMAT: &str = "webgrad-1";
/// Step counts above this are refused.
const MAX_STEP: u64 = 1 << 30;
/// Headers larger than this are refused (they hold only names, shapes and settings).
pub const MAX_HEADER_BYTES: u64 = 1 << 20;

fn bad(why: impl Into<String>) -> Error {
    Error::Invalid {
        op: "checkpoint",
        why: why.into(),
    }
}

/// A parsed, validated checkpoint.
pub struct Checkpoint {
    pub config: Config,
    pub step: u64,
    /// Updates the optimizer has made (its bias corrections depend on it).
    pub optimizer_step: u64,
    /// A text model's tokens: its characters ("vocab"), or GPT-2's ("tokenizer": "gpt2").
    pub tokenizer: Option<Tokenizer>,
    pub tensors: NamedTensors,
    /// An optimizer tensor that holds a value that is not finite: the optimizer's state was
    /// left out (the weights are fine to sample; training starts the optimizer afresh).
    pub broken_state: Option<String>,
}

/// Tensors by name, each its shape and values.
pub type NamedTensors = HashMap<String, (Vec<usize>, Vec<f32>)>;

/// Every tensor of a safetensors file by name, with its shape; all must be f32. Weights must
/// be finite; optimizer state that is not is left out, and the first such name returned.
fn f32_tensors(st: &SafeTensors) -> Result<(NamedTensors, Option<String>)> {
    let (mut tensors, mut broken_state) = (HashMap::new(), None);
    for (name, view) in st.tensors() {
        if view.dtype() != Dtype::F32 {
            return Err(bad(format!("{name} is {:?}, not F32", view.dtype())));
        }
        let values = view
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect::<Vec<f32>>();
        if let Some(v) = values.iter().find(|v| !v.is_finite()) {
            if name.starts_with(STATE_PREFIX) {
                broken_state.get_or_insert(format!("{name} holds {v}"));
                continue;
            }
            return Err(bad(format!(
                "{name} holds {v}: weights that are not finite cannot be trained or sampled (was this saved from a run that diverged?)"
            )));
        }
        tensors.insert(name, (view.shape().to_vec(), values));
    }
    // Half a state is no state: the rest of it goes too.
    if broken_state.is_some() {
        tensors.retain(|name, _| !name.starts_with(STATE_PREFIX));
    }
    Ok((tensors, broken_state))
}

/// The names of the optimizer's state begin with this.
const STATE_PREFIX: &str = "optimizer.";

/// The metadata's name of GPT-2's tokenizer.
const GPT2_TOKENIZER: &str = "gpt2";

/// A text model's tokens from the metadata: a vocabulary of characters, or GPT-2's tokenizer.
fn tokenizer_in(meta: &HashMap<String, String>) -> Result<Option<Tokenizer>> {
    if let Some(name) = meta.get("tokenizer") {
        return match name.as_str() {
            GPT2_TOKENIZER => Ok(Some(Tokenizer::Gpt2)),
            other => Err(bad(format!(
                "its tokenizer {other:?} is not one webgrad knows"
            ))),
        };
    }
    let Some(chars) = meta.get("vocab") else {
        return Ok(None);
    };
    let chars =
        serde_json::from_str(chars).map_err(|e| bad(format!("unreadable vocabulary: {e}")))?;
    Ok(Some(Tokenizer::Chars(Vocab { chars })))
}

/// A text model's tokenizer must come with it: GPT-2's for a model with at least its tokens,
/// or one character per row of its embedding, in the sorted order that encoding relies on.
fn check_vocab(config: &Config, tokenizer: Option<&Tokenizer>) -> Result<()> {
    let ModelConfig::Gpt(g) = &config.model else {
        return Ok(());
    };
    let v = match tokenizer {
        None => return Err(bad("it holds a text model but no vocabulary")),
        Some(Tokenizer::Gpt2) if !Tokenizer::Gpt2.fits(g.vocab) => {
            return Err(bad(format!(
                "it reads GPT-2's tokens, but its model has {} rows of embedding",
                g.vocab
            )))
        }
        Some(Tokenizer::Gpt2) => return Ok(()),
        Some(Tokenizer::Chars(v)) => v,
    };
    if v.chars.len() != g.vocab {
        return Err(bad(format!(
            "its vocabulary has {} characters, its model {}",
            v.chars.len(),
            g.vocab
        )));
    }
    if !v.chars.windows(2).all(|w| w[0] < w[1]) {
        return Err(bad("its vocabulary is not in order or repeats a character"));
    }
    Ok(())
}

impl Checkpoint {
    /// Parses and checks a file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<Checkpoint> {
        let not_safetensors = || {
            bad("this is not a safetensors file (a checkpoint starts with the length of its header, then the header in JSON)")
        };
        if bytes.len() < 8 {
            return Err(not_safetensors());
        }
        let header = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        if header > (bytes.len() as u64 - 8) || bytes.get(8) != Some(&b'{') {
            return Err(not_safetensors());
        }
        if header > MAX_HEADER_BYTES {
            return Err(bad(format!(
                "its header is {header} bytes, more than the {MAX_HEADER_BYTES} a checkpoint needs"
            )));
        }
        let st = SafeTensors::deserialize(bytes)
            .map_err(|e| bad(format!("the safetensors file is damaged ({e})")))?;
        let (_, meta) = SafeTensors::read_metadata(bytes).map_err(|e| bad(e.to_string()))?;
        let meta = meta.metadata().clone().unwrap_or_default();
        if meta.get("format").map(String::as_str) != Some(CHECKPOINT_FORMAT) {
            return Err(bad(
                "this safetensors file is not a webgrad checkpoint (no format metadata)",
            ));
        }
        let field = |k: &str| {
            meta.get(k)
                .ok_or_else(|| bad(format!("the metadata has no {k:?}")))
        };
        let config: Config = serde_json::from_str(field("config")?)
            .map_err(|e| bad(format!("unreadable config: {e}")))?;
        let step = field("step")?.parse().map_err(|_| bad("unreadable step"))?;
        let optimizer_step = match meta.get("optimizer_step") {
            Some(s) => s.parse().map_err(|_| bad("unreadable optimizer step"))?,
            None => step,
        };
        let tokenizer = tokenizer_in(&meta)?;
        let (tensors, broken_state) = f32_tensors(&st)?;
        check_vocab(&config, tokenizer.as_ref())?;
        // Bias corrections use the step as an i32 power: refuse what no run reaches.
        if step > MAX_STEP || optimizer_step > MAX_STEP {
            return Err(bad(format!("its step count is beyond {MAX_STEP}")));
        }
        Ok(Checkpoint {
            config,
            step,
            optimizer_step,
            tokenizer,
            tensors,
            broken_state,
        })
    }

    /// What loading it for training does with a broken optimizer state, as a sentence.
    pub fn state_note(&self) -> Option<String> {
        self.broken_state.as_ref().map(|what| {
            format!("its optimizer state is not usable ({what}), so the optimizer starts afresh: the weights are fine, and training goes on from them with new moments")
        })
    }

    /// Checks that every one of `targets` is present with its shape; returns the values in order.
    pub fn values_for(&self, targets: &[(String, Tensor)]) -> Result<Vec<&[f32]>> {
        values_in(&self.tensors, targets)
    }
}

/// The values of `targets` in `tensors`, in order, once every one is found with its shape.
pub(super) fn values_in<'a>(
    tensors: &'a NamedTensors,
    targets: &[(String, Tensor)],
) -> Result<Vec<&'a [f32]>> {
    targets
        .iter()
        .map(|(name, t)| match tensors.get(name) {
            None => Err(bad(format!("{name} is missing"))),
            Some((shape, _)) if shape != t.shape() => Err(bad(format!(
                "{name} has shape {shape:?}, the model needs {:?}",
                t.shape()
            ))),
            Some((_, v)) => Ok(v.as_slice()),
        })
        .collect()
}

/// Loads `values` into `targets` (all checked beforehand).
pub fn assign_all(targets: &[(String, Tensor)], values: &[&[f32]]) -> Result<()> {
    targets
        .iter()
        .zip(values)
        .try_for_each(|((_, t), v)| t.assign(v))
}

impl Session {
    fn optimizer_state(&self) -> Vec<(String, Tensor)> {
        self.optimizer
            .state_names(&self.params)
            .into_iter()
            .map(|(n, t)| (format!("{STATE_PREFIX}{n}"), t))
            .collect()
    }

    /// The whole session as a safetensors file.
    pub async fn save(&self) -> Result<Vec<u8>> {
        let state = self.optimizer_state();
        let named = self.params.iter().chain(&self.frozen).chain(&state);
        serialize(named, self.metadata(&self.config, self.optimizer.step)?).await
    }

    /// A checkpoint's metadata: the format, `config`, the step, the optimizer's step and the
    /// vocabulary of a text model.
    pub(super) fn metadata(
        &self,
        config: &Config,
        optimizer_step: u64,
    ) -> Result<HashMap<String, String>> {
        let mut meta = HashMap::new();
        meta.insert("format".to_string(), CHECKPOINT_FORMAT.to_string());
        meta.insert(
            "config".to_string(),
            serde_json::to_string(config).map_err(|e| bad(e.to_string()))?,
        );
        meta.insert("step".to_string(), self.step.to_string());
        meta.insert("optimizer_step".to_string(), optimizer_step.to_string());
        if let Some(t) = self.text() {
            insert_tokenizer(&mut meta, &t.tokenizer)?;
        }
        Ok(meta)
    }

    /// Replaces the weights and optimizer state with a checkpoint's. The checkpoint must be of
    /// the same model, or, for a session with LoRA adapters, of the model they adapt: then its
    /// weights become the frozen base and the fine-tuning starts at step 0. On any error
    /// nothing changes.
    pub fn load(&mut self, bytes: &[u8]) -> Result<()> {
        self.load_parsed(&Checkpoint::parse(bytes)?)
    }

    /// As `load`, from a checkpoint already parsed (whose `state_note` the caller may want).
    pub fn load_parsed(&mut self, ck: &Checkpoint) -> Result<()> {
        if ck.config.task != self.config.task {
            return Err(bad(format!(
                "it was trained on the {} task, not {}",
                ck.config.task, self.config.task
            )));
        }
        if adapts(&self.config.model, &ck.config.model) {
            return self.load_base(ck);
        }
        if ck.config.model != self.config.model {
            return Err(bad(format!(
                "it holds a different model: {}",
                differences(&ck.config.model, &self.config.model)
            )));
        }
        self.same_text(ck)?;
        let state = self.optimizer_state();
        let weights = ck.values_for(&self.params)?;
        // Optimizer state is optional (a file exported from PyTorch has none) but must fit.
        let same_rule = ck.config.optimizer.rule == self.config.optimizer.rule;
        let moments = if same_rule && state.iter().all(|(n, _)| ck.tensors.contains_key(n)) {
            Some(ck.values_for(&state)?)
        } else {
            None
        };
        let frozen = ck.values_for(&self.frozen)?;
        assign_all(&self.params, &weights)?;
        assign_all(&self.frozen, &frozen)?;
        self.good.take()?;
        self.good_step = ck.step;
        match moments {
            Some(m) => {
                assign_all(&state, &m)?;
                self.optimizer.step = ck.optimizer_step;
            }
            None => self.restart_optimizer()?,
        }
        self.step = ck.step;
        self.last_loss = None;
        self.release_what_loading_staged();
        Ok(())
    }
}

impl Session {
    /// Refuses a text model's checkpoint whose vocabulary is not this session's.
    fn same_text(&self, ck: &Checkpoint) -> Result<()> {
        match (&ck.tokenizer, self.text()) {
            (Some(v), Some(t)) if *v != t.tokenizer => {
                Err(bad("it was trained on a text with other characters"))
            }
            _ => Ok(()),
        }
    }

    /// Zeroes the optimizer's state and its step, as for a new run.
    fn restart_optimizer(&mut self) -> Result<()> {
        for (_, t) in self.optimizer_state() {
            t.assign(&vec![0.0; t.numel()])?;
        }
        self.optimizer.step = 0;
        Ok(())
    }

    /// A base model's weights under this session's adapters: the adapters keep the values they
    /// have (a new session's: B zero, so the model starts as the base), the optimizer starts
    /// afresh, at step 0.
    fn load_base(&mut self, ck: &Checkpoint) -> Result<()> {
        self.same_text(ck)?;
        self.set_base(&ck.tensors)
    }

    /// A GPT-2 file's weights as the frozen base under this session's adapters, as a
    /// checkpoint's are (`load_base`); the session must read its text as GPT-2's tokens.
    pub fn load_gpt2_base(&mut self, file: &super::HfGpt2) -> Result<()> {
        if !self.is_gpt2() || self.config.model.lora().is_none() {
            return Err(bad(
                "a GPT-2 file is the base of a LoRA run on GPT-2's tokens (set a LoRA rank)",
            ));
        }
        self.set_base(&file.tensors)
    }

    /// `tensors` as the frozen base, every one checked before any is assigned; the optimizer
    /// starts afresh at step 0.
    fn set_base(&mut self, tensors: &NamedTensors) -> Result<()> {
        let base = values_in(tensors, &self.frozen)?;
        assign_all(&self.frozen, &base)?;
        self.restart_optimizer()?;
        self.good.take()?;
        self.good_step = 0;
        self.step = 0;
        self.last_loss = None;
        self.release_what_loading_staged();
        Ok(())
    }

    /// Destroys the free buffers a load left in the pool (its staged values, of the weights'
    /// sizes): a step's tensor past 1 MiB may take a free buffer up to twice its size, and one
    /// that took such a leftover would hold it for good (GPT-2's 105 MB chunk of logits held a
    /// 210 MB one in some runs of the page).
    fn release_what_loading_staged(&self) {
        self.device().release_free_buffers();
    }
}

/// A text model's tokenizer in a file's metadata, as `tokenizer_in` reads it.
pub(super) fn insert_tokenizer(
    meta: &mut HashMap<String, String>,
    tokenizer: &Tokenizer,
) -> Result<()> {
    match tokenizer {
        Tokenizer::Gpt2 => meta.insert("tokenizer".into(), GPT2_TOKENIZER.into()),
        Tokenizer::Chars(v) => {
            let chars = serde_json::to_string(&v.chars).map_err(|e| bad(e.to_string()))?;
            meta.insert("vocab".into(), chars)
        }
    };
    Ok(())
}

/// Named tensors read back and written as a safetensors file with `meta`.
pub(super) async fn serialize(
    named: impl Iterator<Item = &(String, Tensor)>,
    meta: HashMap<String, String>,
) -> Result<Vec<u8>> {
    let mut read = Vec::new();
    for (name, t) in named {
        read.push((name.clone(), t.shape().to_vec(), t.to_vec().await?));
    }
    write_f32(read, meta)
}

/// Tensors as (name, shape, values) written as an F32 safetensors file with `meta`.
pub(super) fn write_f32(
    tensors: Vec<(String, Vec<usize>, Vec<f32>)>,
    meta: HashMap<String, String>,
) -> Result<Vec<u8>> {
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .into_iter()
        .map(|(n, s, v)| (n, s, v.iter().flat_map(|x| x.to_le_bytes()).collect()))
        .collect();
    let views = data
        .iter()
        .map(|(n, s, b)| TensorView::new(Dtype::F32, s.clone(), b).map(|v| (n.clone(), v)))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    safetensors::serialize(views, Some(meta)).map_err(|e| bad(e.to_string()))
}

/// Whether `here` is a GPT with LoRA adapters on the model `file` holds (the same sizes).
fn adapts(here: &ModelConfig, file: &ModelConfig) -> bool {
    let (ModelConfig::Gpt(h), ModelConfig::Gpt(f)) = (here, file) else {
        return false;
    };
    let sizes = |g: &crate::nn::GptConfig| (g.vocab, g.context, g.layers, g.heads, g.width, g.norm);
    h.lora.is_some() && f.lora.is_none() && sizes(h) == sizes(f)
}

/// Every setting in which the checkpoint's model differs from the session's, as
/// "layers 6 (this model: 1)", read from their serialized forms so that no field is missed.
fn differences(file: &ModelConfig, here: &ModelConfig) -> String {
    let family = |m: &ModelConfig| match m {
        ModelConfig::Mlp(_) => "an MLP",
        ModelConfig::Cnn(_) => "a CNN",
        ModelConfig::Gpt(_) => "a GPT",
    };
    let fields = |m: &ModelConfig| match serde_json::to_value(m) {
        Ok(serde_json::Value::Object(o)) => o.into_iter().next().map(|(_, v)| v),
        _ => None,
    };
    let (Some(serde_json::Value::Object(a)), Some(serde_json::Value::Object(b))) =
        (fields(file), fields(here))
    else {
        return format!("{} against {}", family(file), family(here));
    };
    if std::mem::discriminant(file) != std::mem::discriminant(here) {
        return format!("it holds {}, this model is {}", family(file), family(here));
    }
    a.iter()
        .filter(|(k, v)| b.get(*k) != Some(v))
        .map(|(k, v)| {
            let here = b.get(k).map_or("none".into(), |x| x.to_string());
            format!("{k} {v} (this model: {here})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}
