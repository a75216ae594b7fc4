//! Layers and the three model families. Parameter names are those of the equivalent PyTorch
//! modules (see tools/torch_models.py), so checkpoints load into PyTorch as they are.

mod cnn;
mod gpt;
mod init;
mod layers;
mod mlp;

pub use crate::recompute::KeptInputs;
pub use cnn::{Cnn, CnnConfig};
pub(crate) use gpt::vocab_padding;
pub use gpt::{Gpt, GptConfig, KvCache, LoraConfig, Preset};
pub use init::{Init, CPU_MAX_BYTES};
pub use layers::{Activation, Adapter, Conv2d, Embedding, LayerNorm, Linear, Norm, NormLayer};
pub use mlp::{Mlp, MlpConfig};

use crate::{Result, Tensor};

/// Something with named parameters.
pub trait Module {
    /// The parameters with their PyTorch names, in a stable order.
    fn parameters(&self) -> Vec<(String, Tensor)>;
}

/// Prefixes the names of a sub-module's parameters.
pub(crate) fn prefixed(prefix: &str, params: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    params
        .into_iter()
        .map(|(n, t)| (format!("{prefix}.{n}"), t))
        .collect()
}

/// A model that maps a batch of inputs to logits.
pub trait Model: Module {
    /// The forward pass of evaluation and inference: deterministic, no dropout.
    fn forward(&self, x: &Tensor) -> Result<Tensor>;

    /// The forward pass of a training step: as `forward`, with dropout masks drawn from
    /// `seed` where the model has dropout.
    fn forward_train(&self, x: &Tensor, seed: u32) -> Result<Tensor> {
        let _ = seed;
        self.forward(x)
    }

    /// The mean cross-entropy of the predictions for `x` against `targets`: of a training
    /// step when a dropout `seed` is given, else of evaluation. A model may compute it
    /// through logits shaped for speed rather than `forward`'s (the GPT's padded vocabulary).
    fn loss(&self, x: &Tensor, targets: &Tensor, seed: Option<u32>) -> Result<Tensor> {
        let logits = match seed {
            Some(seed) => self.forward_train(x, seed)?,
            None => self.forward(x)?,
        };
        logits.cross_entropy(targets)
    }

    /// What the page shows of the model's insides for the inputs `x`: named intermediate
    /// results of the forward pass (hidden activations, feature maps, attention weights), in
    /// the order they are computed.
    fn insides(&self, x: &Tensor) -> Result<Vec<(String, Tensor)>>;
}
