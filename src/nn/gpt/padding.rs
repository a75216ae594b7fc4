//! The output layer's vocabulary padded to a multiple of 4 words on a GPU, for the training
//! loss's products to read their rows as vec4s; the pads' logits are masked far below the
//! tokens', so the loss and its gradients are those of the unpadded layer.

use super::GptConfig;
use crate::nn::{Embedding, Init};
use crate::{Device, Result, Tensor};

/// Tokens the output layer's vocabulary is padded with for the training loss on a GPU, so that
/// the logits' rows are a multiple of 4 long and the large-tile matmul reads them and their
/// gradients as vec4s: GPT-2's input gradients through its 50,257 logits ran at 26 TFLOPS
/// read one value at a time, its other products at 40 (docs/BENCHMARKS.md). A vocabulary
/// under `PADDED_FROM` is left as it is.
pub(crate) fn vocab_padding(vocab: usize) -> usize {
    if vocab < PADDED_FROM {
        return 0;
    }
    vocab.next_multiple_of(4) - vocab
}

/// The smallest vocabulary worth padding: the characters' 65 logits make products too small
/// for their reads to matter (nanochar moved by 0.1 ms), and the pad costs three dispatches.
const PADDED_FROM: usize = 1024;

/// A GPT's padded vocabulary, on a GPU where `vocab_padding` pads.
#[derive(Clone)]
pub(super) struct Padding {
    /// What the training loss adds to the logits of the padded vocabulary: 0 for each token,
    /// a large negative number for each pad, so that the softmax gives the pads nothing.
    pub mask: Tensor,
    /// A frozen token embedding (LoRA's base) kept padded: the embedding's weight is a view of
    /// its first rows, and the loss reads it whole. A trained one is padded a step at a time,
    /// and one larger than a binding not at all (it is read in windows, unpadded).
    pub table: Option<Tensor>,
}

/// The token embedding of `config` (frozen or not, as `init` makes it now), and on a GPU
/// where the vocabulary is padded, its `Padding`.
pub(super) fn token_embedding(
    config: &GptConfig,
    init: &mut Init,
) -> Result<(Embedding, Option<Padding>)> {
    let (vocab, width) = (config.vocab, config.width);
    let (Device::Gpu(gpu), pad @ 1..) = (init.device().clone(), vocab_padding(vocab)) else {
        return Ok((Embedding::new(init, vocab, width, 0.02)?, None));
    };
    let mut mask = vec![0.0; vocab];
    mask.resize(vocab + pad, -1e30);
    let mask = Tensor::from_vec(mask, &[vocab + pad], init.device())?;
    // As the table will be held: GPT-2's binds whole in f16 (77 MB) where in f32 (154 MB) it
    // may not, and an f16 table has no f32 copy to be padded into each step.
    let value_bytes = if init.in_f16() { 2 } else { 4 };
    let padded_bytes = ((vocab + pad) * width * value_bytes) as u64;
    let binds = padded_bytes <= gpu.limits().max_storage_buffer_binding_size;
    if config.lora.is_none() || !binds {
        let embedding = Embedding::new(init, vocab, width, 0.02)?;
        return Ok((embedding, Some(Padding { mask, table: None })));
    }
    // A copy padded each step would be a second table of GPT-2's 154 MB in the pool.
    let (weight, table) = init.normal_padded([vocab, width], pad, 0.02)?;
    let padding = Padding {
        mask,
        table: Some(table),
    };
    Ok((Embedding { weight }, Some(padding)))
}

impl Padding {
    /// The output layer the training loss runs through for the token embedding `weight`, and
    /// the mask to add to its logits.
    pub fn output_layer(&self, weight: &Tensor) -> Result<(Tensor, Option<&Tensor>)> {
        if let Some(table) = &self.table {
            return Ok((table.clone(), Some(&self.mask)));
        }
        // A table larger than a binding is bound in windows (`ops::row_windows`): no padded
        // copy, which would be one more such table.
        if crate::ops::row_windows(weight).is_some() {
            return Ok((weight.clone(), None));
        }
        let pad = self.mask.shape()[0] - weight.shape()[0];
        Ok((weight.pad(0, (0, pad), 0.0)?, Some(&self.mask)))
    }
}
