//! What a run will need, worked out from its config alone and checked before anything is
//! allocated: a model too large for the device is refused with a sentence that names the
//! setting to change, instead of growing memory layer by layer until the process dies.

use super::{Config, ModelConfig};
use crate::nn::{CnnConfig, GptConfig, MlpConfig, CPU_MAX_BYTES};
use crate::{Device, Error, Result};

/// Copies of every parameter a session holds: the weights, their gradients, two optimizer
/// moments, and the last good and the tried weights it keeps to recover from a bad step.
const COPIES_PER_PARAMETER: u64 = 6;
/// Floats a GPT block keeps per token for the backward pass (layer-norm outputs, q, k and v,
/// attention and projection outputs, the MLP's 4·width twice, residuals), rounded up.
const GPT_FLOATS_PER_TOKEN_PER_WIDTH: u64 = 20;
/// What a run may hold in all: the GPU's memory is not visible through WebGPU, so a budget
/// that a desktop GPU (or, in the browser, the tab) can give.
const GPU_BUDGET: u64 = if cfg!(target_arch = "wasm32") {
    4 << 30
} else {
    16 << 30
};
/// The CPU backend's budget (in the browser, WebAssembly's memory is 4 GiB at most).
const CPU_BUDGET: u64 = 2 << 30;

/// One tensor the run will hold, its size and the setting that makes it so large.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub what: &'static str,
    pub floats: u64,
    pub setting: String,
    /// A table the model reads by rows (the token embedding): where it does not train
    /// (`Footprint::tables_frozen`) it is bound a window of rows at a time
    /// (`ops::row_windows`), so held to the largest buffer rather than the largest binding.
    pub table: bool,
}

/// A run's size, from its config.
#[derive(Debug, Clone, PartialEq)]
pub struct Footprint {
    /// The parameters that train, and those frozen (LoRA's base, kept once: no gradient, no
    /// optimizer moments, no copies to recover from a bad step).
    pub parameters: u64,
    pub frozen: u64,
    /// Of the frozen, those held in f16 (`Config::frozen_f16`: the projections' weights and
    /// the embeddings' tables), which take half the bytes.
    pub frozen_f16: u64,
    /// Floats of activations one training step keeps at once.
    pub activations: u64,
    /// The largest tensors, each with the setting that controls it.
    pub parts: Vec<Part>,
    /// The settings that set the parameter count, for a sentence.
    pub model_settings: &'static str,
    /// The settings that set the activations.
    pub step_settings: &'static str,
    /// Whether the tables among `parts` are only read (a LoRA base's, a sampled model's).
    pub tables_frozen: bool,
}

fn part(what: &'static str, floats: u64, setting: impl Into<String>) -> Part {
    Part {
        what,
        floats,
        setting: setting.into(),
        table: false,
    }
}

/// The largest tensor `device` holds: one binding's worth on a GPU, or with `windowed` (bound
/// a window of rows at a time) one buffer's.
fn largest_tensor(device: &Device, windowed: bool) -> u64 {
    match device {
        Device::Gpu(gpu) => {
            let l = gpu.limits();
            match windowed {
                true => l.max_buffer_size,
                false => l.max_storage_buffer_binding_size.min(l.max_buffer_size),
            }
        }
        Device::Cpu => CPU_MAX_BYTES,
    }
}

/// Products that saturate: a hostile config (a million layers of width a million) must give a
/// huge number, never wrap around to a small one.
fn mul(xs: &[usize]) -> u64 {
    xs.iter().fold(1u64, |n, &x| n.saturating_mul(x as u64))
}

/// Weights and biases of a dense layer.
fn linear(inputs: u64, outputs: u64) -> u64 {
    inputs.saturating_mul(outputs).saturating_add(outputs)
}

fn mlp(c: &MlpConfig, batch: usize) -> Footprint {
    let (i, w, o) = (c.inputs as u64, c.width as u64, c.outputs as u64);
    let parameters = match c.depth as u64 {
        0 => linear(i, o),
        d => linear(i, w)
            .saturating_add(linear(w, w).saturating_mul(d - 1))
            .saturating_add(linear(w, o)),
    };
    Footprint {
        parameters,
        frozen: 0,
        frozen_f16: 0,
        // Each layer's pre- and post-activation and its gradient.
        activations: mul(&[3, batch, c.width, c.depth.max(1)]),
        parts: vec![
            part(
                "a hidden layer's weights",
                mul(&[c.width, c.width]),
                "width",
            ),
            part(
                "the first layer's weights",
                mul(&[c.inputs, c.width]),
                "width",
            ),
            part(
                "a layer's activations",
                mul(&[batch, c.width]),
                "batch or width",
            ),
        ],
        model_settings: "width or depth",
        step_settings: "batch",
        tables_frozen: false,
    }
}

fn cnn(c: &CnnConfig, batch: usize) -> Footprint {
    let (mut parameters, mut activations, mut inputs) = (0u64, 0u64, 1usize);
    let (mut largest_map, mut largest_unfold, mut largest_dw) = (0u64, 0u64, 0u64);
    for (i, &ch) in c.channels.iter().enumerate().take(64) {
        parameters = parameters.saturating_add(linear(mul(&[inputs, 9]), ch as u64));
        let side = c.image >> i;
        let map = mul(&[batch, ch, side, side]);
        // The convolution's output, its activation and pooling, and their gradients.
        activations = activations.saturating_add(map.saturating_mul(4));
        largest_map = largest_map.max(map);
        // On the GPU a convolution is a product with its input unfolded (im2col: 9 values per
        // input channel and position), and its weight gradient is summed from one per example
        // (src/ops/conv.rs); both live for one layer's backward at a time.
        largest_unfold = largest_unfold.max(mul(&[batch, inputs, 9, side, side]));
        largest_dw = largest_dw.max(mul(&[batch, ch, inputs, 9]));
        inputs = ch;
    }
    activations = activations
        .saturating_add(largest_unfold.saturating_mul(2))
        .saturating_add(largest_dw);
    let side = c.image >> c.channels.len().min(63);
    let flat = mul(&[inputs, side, side]);
    parameters = parameters
        .saturating_add(linear(flat, c.hidden as u64))
        .saturating_add(linear(c.hidden as u64, c.classes as u64));
    Footprint {
        parameters,
        frozen: 0,
        frozen_f16: 0,
        activations,
        parts: vec![
            part(
                "a convolution's feature maps",
                largest_map,
                "batch or channels",
            ),
            part(
                "a convolution's unfolded input",
                largest_unfold,
                "batch or channels",
            ),
            part(
                "a convolution's weight gradients, one per example",
                largest_dw,
                "batch or channels",
            ),
            part(
                "the first dense layer's weights",
                flat.saturating_mul(c.hidden as u64),
                "hidden width or channels",
            ),
        ],
        model_settings: "channels or hidden width",
        step_settings: "batch",
        tables_frozen: false,
    }
}

/// A GPT of `c` trained on `batch` windows of `window` tokens, its blocks run again in
/// backward when `recompute` (`Gpt::set_recompute`): each keeps its input, and one block's
/// activations are in flight at a time.
fn gpt(c: &GptConfig, (batch, window): (usize, usize), recompute: bool) -> Footprint {
    let w = c.width;
    let block = mul(&[12, w, w]).saturating_add(mul(&[13, w]));
    let parameters = mul(&[c.vocab.saturating_add(c.context), w])
        .saturating_add(block.saturating_mul(c.layers as u64))
        .saturating_add(mul(&[2, w]));
    let tokens = mul(&[batch, window]);
    let (kept, in_flight) = match recompute {
        true => (c.layers, 1),
        false => (0, c.layers),
    };
    let per_block = GPT_FLOATS_PER_TOKEN_PER_WIDTH as usize;
    let per_token = mul(&[per_block, in_flight, w])
        .saturating_add(mul(&[kept, w]))
        .saturating_add(mul(&[4, w]));
    Footprint {
        parameters,
        frozen: 0,
        frozen_f16: 0,
        activations: tokens
            .saturating_mul(per_token)
            .saturating_add(logits(c, tokens))
            .saturating_add(attention_scores(c, (batch, window), in_flight))
            .saturating_add(padded_output_layer(c)),
        parts: vec![
            part("an MLP weight (4·width × width)", mul(&[4, w, w]), "width"),
            Part {
                table: true,
                ..part(
                    "the token embedding (vocabulary × width)",
                    mul(&[c.vocab, w]),
                    "width".to_string() + &or_the_text(c.vocab),
                )
            },
            part(
                "the MLP's activations (batch × context × 4·width)",
                mul(&[batch, window, 4, w]),
                "batch, context or width",
            ),
        ],
        model_settings: "width or layers",
        step_settings: "batch or context",
        tables_frozen: c.lora.is_some(),
    }
}

/// A vocabulary above this is the text's doing (an alphabet's text has a few hundred
/// characters at most; Chinese or Japanese text has thousands), and named as a cause.
const LARGE_VOCABULARY: usize = 1000;

/// The remedy a large vocabulary adds to the settings: the text.
fn or_the_text(vocab: usize) -> String {
    match vocab > LARGE_VOCABULARY {
        true => format!(", or train on a text with fewer distinct characters than its {vocab}"),
        false => String::new(),
    }
}

/// Floats of the logits a step keeps over `tokens` (their values, the loss's gradient of
/// them, and a product's output), chunked where the output layer is frozen
/// (`ops::cross_entropy_chunk_rows`): a trained output layer may take them whole.
fn logits(c: &GptConfig, tokens: u64) -> u64 {
    // A chunk's rows may be rounded up to where a binding may start: 64 more at most.
    let chunk = crate::ops::FROZEN_CHUNK_BYTES / 4 / c.vocab.max(1) as u64 + 64;
    let rows = match c.lora {
        Some(_) => tokens.min(chunk),
        None => tokens,
    };
    rows.saturating_mul(mul(&[3, c.vocab]))
}

/// Floats of the output layer's padded copy and its gradient, where the training loss pads a
/// large vocabulary on a GPU (`vocab_padding`); counted for the CPU too, as an upper bound. A
/// frozen table (LoRA's base) is kept padded instead: only its pad rows.
fn padded_output_layer(c: &GptConfig) -> u64 {
    match (crate::nn::vocab_padding(c.vocab), c.lora) {
        (0, _) => 0,
        (pad, Some(_)) => mul(&[pad, c.width]),
        (pad, None) => mul(&[2, c.vocab + pad, c.width]),
    }
}

/// Floats of attention probabilities a step keeps where long contexts go through the T×T
/// scores (src/ops/attention/scores.rs): batch × heads × context² for each of `layers` kept
/// at once, and two more layers' worth for the scores and their gradients while one is in
/// flight.
fn attention_scores(c: &GptConfig, (batch, window): (usize, usize), layers: usize) -> u64 {
    match crate::ops::scores_bytes(batch, c.heads, window) {
        Some(bytes) => (bytes / 4).saturating_mul(layers as u64 + 2),
        None => 0,
    }
}

/// With LoRA adapters of rank r on each block's four projections (in → out: width → 3·width,
/// width → width, width → 4·width, 4·width → width), the GPT's own weights freeze and the
/// adapters, r·(in + out) each, are what trains.
fn adapted(mut f: Footprint, c: &GptConfig, frozen_f16: bool) -> Footprint {
    if let Some(lora) = c.lora {
        let per_block = mul(&[16, lora.rank, c.width]);
        f.frozen = f.parameters;
        f.parameters = per_block.saturating_mul(c.layers as u64);
        if frozen_f16 {
            let projections = mul(&[12, c.width, c.width]).saturating_mul(c.layers as u64);
            let tables = mul(&[c.vocab + c.context, c.width]);
            f.frozen_f16 = projections.saturating_add(tables);
        }
    }
    f
}

/// Bytes as a short figure for a sentence.
/// (with `extra` more decimals than people usually need).
fn with_decimals(bytes: u64, extra: usize) -> String {
    match bytes {
        b if b >= 1 << 40 => format!("{:.*} TB", extra, b as f64 / 1e12),
        b if b >= 1 << 30 => format!("{:.*} GB", 1 + extra, b as f64 / 1e9),
        b => format!("{:.*} MB", extra, b as f64 / 1e6),
    }
}

/// A size that is more than a limit, and the limit, with decimals enough to tell them apart
/// (not "1.1 GB, more than the 1.1 GB").
fn more_than(bytes: u64, limit: u64) -> (String, String) {
    (0..4)
        .map(|extra| (with_decimals(bytes, extra), with_decimals(limit, extra)))
        .find(|(a, b)| a != b)
        .unwrap_or_else(|| (with_decimals(bytes, 3), with_decimals(limit, 3)))
}

impl Footprint {
    pub fn of(config: &Config) -> Footprint {
        match &config.model {
            ModelConfig::Mlp(c) => mlp(c, config.batch),
            ModelConfig::Cnn(c) => cnn(c, config.batch),
            ModelConfig::Gpt(c) => {
                let window = config.text_window().unwrap_or(c.context);
                let f = gpt(c, (config.batch, window), config.recompute);
                adapted(f, c, config.frozen_f16)
            }
        }
    }

    /// Bytes the run holds at once: every parameter's copies and one step's activations.
    pub fn bytes(&self) -> u64 {
        self.weight_floats()
            .saturating_add(self.activations)
            .saturating_mul(4)
    }

    /// Floats the weights take: the trained ones' copies, the frozen ones once (those in f16
    /// as half as many).
    fn weight_floats(&self) -> u64 {
        self.parameters
            .saturating_mul(COPIES_PER_PARAMETER)
            .saturating_add(self.frozen)
            .saturating_sub(self.frozen_f16 / 2)
    }

    /// The footprint of running the model only (sampling): its token embedding is then only
    /// read, a window of rows at a time where one binding cannot hold it.
    pub fn read_only(self) -> Footprint {
        Footprint {
            tables_frozen: true,
            ..self
        }
    }

    /// The model's size as people say it ("a 1.2 M-parameter model"), frozen weights included.
    pub fn model_in_words(&self) -> String {
        format!(
            "a {}-parameter model",
            count(self.parameters.saturating_add(self.frozen))
        )
    }

    /// Refuses a run that `device` could not hold, naming the setting to lower.
    pub fn check(&self, device: &Device) -> Result<()> {
        let (budget, who) = match device {
            Device::Gpu(_) => (GPU_BUDGET, "this GPU"),
            Device::Cpu => (CPU_BUDGET, "the CPU backend"),
        };
        for p in &self.parts {
            let bytes = p.floats.saturating_mul(4);
            let max_tensor = largest_tensor(device, p.table && self.tables_frozen);
            if bytes > max_tensor {
                let (size, limit) = more_than(bytes, max_tensor);
                return Err(too_large(format!(
                    "{} would take {size}, more than the {limit} {who} can hold in one buffer: lower the {}",
                    p.what,
                    p.setting
                )));
            }
        }
        let (bytes, weights) = (self.bytes(), self.weight_floats().saturating_mul(4));
        if bytes > budget {
            // If the weights alone do not fit, no batch will: the model must shrink.
            let lower = if weights > budget {
                self.model_settings
            } else {
                self.step_settings
            };
            let (size, limit) = more_than(bytes, budget);
            return Err(too_large(format!(
                "training it would take about {size} ({} parameters, kept {COPIES_PER_PARAMETER} times, and one step's activations), more than the {limit} allowed on {who}: lower the {lower}",
                count(self.parameters),
            )));
        }
        Ok(())
    }
}

/// A parameter count as people say it (1.2 M, 3.4 G).
fn count(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.1} G", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} M", n as f64 / 1e6),
        n => n.to_string(),
    }
}

fn too_large(why: String) -> Error {
    Error::Invalid {
        op: "model size",
        why: format!("this model is too large: {why}"),
    }
}

#[cfg(test)]
mod tests;
