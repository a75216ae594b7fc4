//! The character-level GPT: learned positions, pre-norm blocks (LayerNorm or RMSNorm) of causal
//! self-attention and a GELU MLP, and an output layer tied to the token embedding.

mod cache;
mod padding;

pub use cache::KvCache;

use super::{prefixed, Adapter, Embedding, Init, Linear, Model, Module, Norm, NormLayer};
use crate::ops::cross_entropy_chunk_rows;
use crate::recompute::{self, KeptInputs, Recorded};
use crate::{Error, Result, Tensor};
pub(crate) use padding::vocab_padding;
use padding::{token_embedding, Padding};
use serde::{Deserialize, Serialize};
use std::rc::Rc;

/// Sizes of a GPT, and its dropout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GptConfig {
    pub vocab: usize,
    pub context: usize,
    pub layers: usize,
    pub heads: usize,
    pub width: usize,
    /// Probability of dropping an activation in training: after the embeddings and on each
    /// block's two outputs into the residual stream, as nanoGPT (0 in checkpoints from before).
    #[serde(default)]
    pub dropout: f32,
    /// The blocks' and the output's normalisation (LayerNorm in checkpoints from before).
    #[serde(default)]
    pub norm: Norm,
    /// LoRA: adapters on the attention's and the MLP's projections, the rest frozen (none in
    /// checkpoints from before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<LoraConfig>,
}

/// LoRA's rank r and α: each adapted projection learns s · B·A with A [r, in], B [out, r] and
/// s = α / r.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoraConfig {
    pub rank: usize,
    pub alpha: f32,
}

crate::setting_enum! {
    /// A named GPT size: tiny (trains in CI), small (gpt_small_b32), nanochar (gpt_nanochar_b64,
    /// nanoGPT's shakespeare_char). In settings and on the command line by its lower-case name.
    pub enum Preset {
        Tiny,
        Small,
        Nanochar,
    }
}

impl GptConfig {
    /// The sizes of a preset for a vocabulary of `vocab` characters. Tiny is one wide block: at
    /// the same training budget, recipes swept on Shakespeare reached a lower validation loss
    /// with one block of width 96 than with two of 32 or 64 (docs/TRAINING.md).
    pub fn preset(preset: Preset, vocab: usize) -> GptConfig {
        let (context, layers, heads, width, dropout) = match preset {
            Preset::Tiny => (32, 1, 4, 96, 0.0),
            Preset::Small => (128, 4, 4, 128, 0.0),
            Preset::Nanochar => (256, 6, 6, 384, 0.2),
        };
        GptConfig {
            vocab,
            context,
            layers,
            heads,
            width,
            dropout,
            norm: Norm::Layernorm,
            lora: None,
        }
    }

    fn check(&self) -> Result<()> {
        let bad = |why: String| Err(Error::Invalid { op: "gpt", why });
        if self.vocab == 0 || self.context == 0 || self.width == 0 || self.heads == 0 {
            return bad("vocabulary, context, width and heads must be at least 1".into());
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return bad(format!(
                "the dropout must be at least 0 and below 1, not {}",
                self.dropout
            ));
        }
        if !self.width.is_multiple_of(self.heads) {
            return bad(format!(
                "{} heads do not divide the width {}",
                self.heads, self.width
            ));
        }
        if let Some(l) = self.lora {
            if l.rank == 0 || l.rank > self.width {
                return bad(format!(
                    "the LoRA rank must be from 1 to the width {}, not {}",
                    self.width, l.rank
                ));
            }
            if !(l.alpha.is_finite() && l.alpha > 0.0) {
                return bad(format!("LoRA's alpha must be above 0, not {}", l.alpha));
            }
        }
        Ok(())
    }
}

#[derive(Clone)]
struct Block {
    ln1: NormLayer,
    qkv: Linear,
    proj: Linear,
    ln2: NormLayer,
    fc: Linear,
    fc_proj: Linear,
}

impl Block {
    fn new(init: &mut Init, c: usize, layers: usize, norm: Norm) -> Result<Block> {
        let linear = |i: &mut Init, inputs, outputs, std: f64| -> Result<Linear> {
            Ok(Linear {
                weight: i.weight(&[outputs, inputs], std)?,
                bias: Some(i.constant(&[outputs], 0.0)?),
                adapter: None,
            })
        };
        // GPT-2's scaled init for the projections that add into the residual stream.
        let residual_std = 0.02 / (2.0 * layers as f64).sqrt();
        Ok(Block {
            ln1: NormLayer::new(norm, init, c)?,
            qkv: linear(init, c, 3 * c, 0.02)?,
            proj: linear(init, c, c, residual_std)?,
            ln2: NormLayer::new(norm, init, c)?,
            fc: linear(init, c, 4 * c, 0.02)?,
            fc_proj: linear(init, 4 * c, c, residual_std)?,
        })
    }

    /// The block, with dropout on its two outputs into the residual stream when `drop` says so;
    /// its packed q, k and v are added to `seen` when asked (they are kept until then).
    fn forward(
        &self,
        x: &Tensor,
        heads: usize,
        drop: &mut DropoutPass,
        seen: Option<&mut Vec<Tensor>>,
    ) -> Result<Tensor> {
        // q, k and v side by side, read in place by the attention (in f16 where it reads so).
        let qkv = self
            .qkv
            .forward_packed_qkv(&self.ln1.input_of(x, &self.qkv)?, heads)?;
        let x = drop.residual(&self.proj, &qkv.attention_packed(heads)?, x)?;
        if let Some(seen) = seen {
            seen.push(qkv);
        }
        let pre = self.ln2.forward_into(&x, &self.fc)?;
        drop.gelu_residual(&self.fc_proj, &pre, &x)
    }
}

impl Block {
    /// LoRA adapters on the four projections.
    fn adapt(&mut self, init: &mut Init, lora: LoraConfig) -> Result<()> {
        for linear in [
            &mut self.qkv,
            &mut self.proj,
            &mut self.fc,
            &mut self.fc_proj,
        ] {
            linear.adapter = Some(Adapter::new(init, linear, lora.rank, lora.alpha)?);
        }
        Ok(())
    }
}

impl Module for Block {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        let mut p = prefixed("ln1", self.ln1.parameters());
        p.extend(prefixed("attn.qkv", self.qkv.parameters()));
        p.extend(prefixed("attn.proj", self.proj.parameters()));
        p.extend(prefixed("ln2", self.ln2.parameters()));
        p.extend(prefixed("mlp.fc", self.fc.parameters()));
        p.extend(prefixed("mlp.proj", self.fc_proj.parameters()));
        p
    }
}

/// The dropout of one forward pass: off (evaluation, sampling), or a probability and the seed
/// of the step, each site of the pass drawing its own mask.
#[derive(Clone, Copy)]
enum DropoutPass {
    Off,
    On { p: f32, seed: u32, site: u32 },
}

impl DropoutPass {
    fn new(p: f32, seed: Option<u32>) -> DropoutPass {
        match seed {
            Some(seed) if p > 0.0 => DropoutPass::On { p, seed, site: 0 },
            _ => DropoutPass::Off,
        }
    }

    /// The probability and seed of the next site, or None with dropout off.
    fn next_site(&mut self) -> Option<(f32, u32)> {
        match self {
            DropoutPass::Off => None,
            DropoutPass::On { p, seed, site } => {
                *site += 1;
                // A site's seed: the step's, moved by an odd constant per site so that no two
                // sites of a step share a mask.
                Some((*p, seed.wrapping_add(site.wrapping_mul(0x9E37_79B9))))
            }
        }
    }

    /// `x` with dropout applied at the next site.
    fn apply(&mut self, x: Tensor) -> Result<Tensor> {
        match self.next_site() {
            None => Ok(x),
            Some((p, seed)) => x.dropout(p, seed),
        }
    }

    /// residual + dropout(linear(h)), in the product's kernel.
    fn residual(&mut self, linear: &Linear, h: &Tensor, residual: &Tensor) -> Result<Tensor> {
        match self.next_site() {
            None => linear.forward_residual(h, residual),
            Some(site) => linear.forward_residual_dropout(h, residual, site),
        }
    }

    /// residual + dropout(linear(gelu(pre))), the GELU's backward fused into the product's,
    /// the dropout and the residual in its store.
    fn gelu_residual(
        &mut self,
        linear: &Linear,
        pre: &Tensor,
        residual: &Tensor,
    ) -> Result<Tensor> {
        match self.next_site() {
            None => linear.forward_gelu_residual(pre, residual),
            Some(site) => linear.forward_gelu_residual_dropout(pre, residual, site),
        }
    }
}

/// torch: tok_emb, pos_emb, blocks.N.{ln1, attn.qkv, attn.proj, ln2, mlp.fc, mlp.proj}, ln_f.
pub struct Gpt {
    pub config: GptConfig,
    tok_emb: Embedding,
    pos_emb: Embedding,
    blocks: Vec<Block>,
    ln_f: NormLayer,
    /// Whether training keeps only each block's input for backward (and how) and runs the
    /// block again there (`set_recompute`).
    recompute: Option<KeptInputs>,
    /// The output layer's padded vocabulary, on a GPU where `vocab_padding` pads.
    padding: Option<Padding>,
}

impl Gpt {
    /// A GPT of `config`; with LoRA, every weight of the model itself is frozen (drawn as
    /// without LoRA, for a checkpoint to replace) and only the adapters train.
    pub fn new(config: &GptConfig, init: &mut Init) -> Result<Gpt> {
        config.check()?;
        let c = config.width;
        init.set_frozen(config.lora.is_some());
        let (tok_emb, padding) = token_embedding(config, init)?;
        let mut gpt = Gpt {
            config: config.clone(),
            tok_emb,
            pos_emb: Embedding::new(init, config.context, c, 0.02)?,
            blocks: (0..config.layers)
                .map(|_| Block::new(init, c, config.layers, config.norm))
                .collect::<Result<_>>()?,
            ln_f: NormLayer::new(config.norm, init, c)?,
            recompute: None,
            padding,
        };
        init.set_frozen(false);
        if let Some(lora) = config.lora {
            for block in &mut gpt.blocks {
                block.adapt(init, lora)?;
            }
        }
        Ok(gpt)
    }
}

impl Module for Gpt {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        let mut p = prefixed("tok_emb", self.tok_emb.parameters());
        p.extend(prefixed("pos_emb", self.pos_emb.parameters()));
        for (i, b) in self.blocks.iter().enumerate() {
            p.extend(prefixed(&format!("blocks.{i}"), b.parameters()));
        }
        p.extend(prefixed("ln_f", self.ln_f.parameters()));
        p
    }
}

impl Gpt {
    /// The device its weights are on.
    pub fn device(&self) -> &crate::Device {
        self.tok_emb.weight.device()
    }

    /// Token ids [batch, T] (u32, T <= context) -> the last norm's output [batch * T, width],
    /// with dropout drawn from `seed` when one is given; each block's packed q, k and v added
    /// to `seen`.
    fn hidden(
        &self,
        tokens: &Tensor,
        seed: Option<u32>,
        mut seen: Option<&mut Vec<Tensor>>,
    ) -> Result<Tensor> {
        let (batch, t) = (tokens.shape()[0], tokens.shape()[1]);
        if t > self.config.context {
            return Err(Error::Invalid {
                op: "gpt",
                why: format!("{t} tokens exceed the context of {}", self.config.context),
            });
        }
        let positions = Tensor::from_u32((0..t as u32).collect(), &[t], tokens.device())?;
        let mut drop = DropoutPass::new(self.config.dropout, seed);
        let embedded = self
            .tok_emb
            .forward(tokens)?
            .add(&self.pos_emb.forward(&positions)?)?;
        let mut x = drop.apply(embedded)?;
        let training = seen.is_none() && crate::autograd::is_enabled();
        match self.recompute.filter(|_| training) {
            Some(kept) => x = self.recomputed_blocks(&x, &mut drop, kept)?,
            None => {
                for block in &self.blocks {
                    x = block.forward(&x, self.config.heads, &mut drop, seen.as_deref_mut())?;
                }
            }
        }
        self.ln_f
            .forward(&x)?
            .reshape(&[batch * t, self.config.width])
    }

    /// With `Some(kept)`, training keeps only each block's input (as `kept` says) for
    /// backward, which runs the block again (`recompute.rs`): GPT-2's blocks on 8 × 256 tokens
    /// keep about 1.5 GB otherwise, at the cost of a second forward pass through them. None:
    /// the blocks keep their activations.
    pub fn set_recompute(&mut self, kept: Option<KeptInputs>) {
        self.recompute = kept;
    }

    /// The blocks on `x`, each recorded as one op that keeps only its input and runs the
    /// block again in backward, its dropout from the same sites. The inputs are kept as `kept`
    /// says, the last block's output (which the final norm reads) whole.
    fn recomputed_blocks(
        &self,
        x: &Tensor,
        drop: &mut DropoutPass,
        kept: KeptInputs,
    ) -> Result<Tensor> {
        // Nothing to run again: the input goes to the final norm as it is, in f32.
        if self.blocks.is_empty() {
            return Ok(x.clone());
        }
        let heads = self.config.heads;
        let mut x = Recorded::input(x, kept)?;
        for (i, block) in self.blocks.iter().enumerate() {
            let start = *drop;
            let out = crate::no_grad(|| block.forward(&x.value, heads, drop, None))?;
            let params = block.parameters().into_iter().map(|(_, p)| p).collect();
            let block = block.clone();
            let part = move |x: &Tensor| block.forward(x, heads, &mut start.clone(), None);
            let out_kept = match i + 1 == self.blocks.len() {
                true => KeptInputs::Whole,
                false => kept,
            };
            x = recompute::recorded(out, &x, params, Rc::new(part), out_kept)?;
        }
        Ok(x.node)
    }

    /// The vocabulary the training loss runs over: `config.vocab`, or more with the pads of
    /// `padded_logits`.
    pub fn loss_vocab(&self) -> usize {
        self.padding
            .as_ref()
            .map_or(self.config.vocab, |p| p.mask.shape()[0])
    }

    /// Logits [batch * T, vocab] through the output layer, tied to the token embedding.
    fn logits(&self, hidden: &Tensor) -> Result<Tensor> {
        crate::ops::times_transposed(hidden, &self.tok_emb.weight)
    }

    /// The output layer the training loss runs through: the token embedding padded to a
    /// multiple of 4 words (`vocab_padding`), the pads' weights zero and their logits masked
    /// far below the tokens' by the bias, for the same loss and gradients as `logits` through
    /// faster products; without padding, the embedding itself.
    fn output_layer(&self) -> Result<(Tensor, Option<&Tensor>)> {
        let weight = &self.tok_emb.weight;
        match &self.padding {
            Some(padding) => padding.output_layer(weight),
            None => Ok((weight.clone(), None)),
        }
    }

    /// The mean loss of the logits of `hidden`: whole, or in chunks of rows where the logits
    /// would take more than a chunk may (`cross_entropy_chunk_rows`: GPT-2's 50,257 words).
    fn output_loss(&self, hidden: &Tensor, targets: &Tensor) -> Result<Tensor> {
        let (weight, mask) = self.output_layer()?;
        let trains = crate::autograd::is_enabled() && weight.requires_grad();
        let chunk = cross_entropy_chunk_rows(self.device(), weight.shape()[0], trains);
        if chunk < hidden.shape()[0] {
            return hidden.linear_cross_entropy((&weight, mask), targets, chunk);
        }
        match mask {
            Some(mask) => hidden.linear(&weight, Some(mask))?.cross_entropy(targets),
            None => self.logits(hidden)?.cross_entropy(targets),
        }
    }
}

impl Model for Gpt {
    fn forward(&self, tokens: &Tensor) -> Result<Tensor> {
        self.logits(&self.hidden(tokens, None, None)?)
    }

    fn forward_train(&self, tokens: &Tensor, seed: u32) -> Result<Tensor> {
        self.logits(&self.hidden(tokens, Some(seed), None)?)
    }

    fn loss(&self, tokens: &Tensor, targets: &Tensor, seed: Option<u32>) -> Result<Tensor> {
        self.output_loss(&self.hidden(tokens, seed, None)?, targets)
    }

    /// Each layer's attention weights over one sequence of tokens [1, T]: [heads, T, T] as
    /// "layer N", row i the weights query i gives keys 0..=i.
    fn insides(&self, tokens: &Tensor) -> Result<Vec<(String, Tensor)>> {
        let (batch, t) = (tokens.shape()[0], tokens.shape()[1]);
        if batch != 1 {
            return Err(Error::Invalid {
                op: "gpt",
                why: format!("attention weights are shown for one sequence, not {batch}"),
            });
        }
        let mut seen = Vec::new();
        self.hidden(tokens, None, Some(&mut seen))?;
        let mask = causal_mask(t, tokens.device())?;
        seen.iter()
            .enumerate()
            .map(|(i, qkv)| {
                let weights = attention_weights(qkv, &mask, self.config.heads)?;
                Ok((format!("layer {}", i + 1), weights))
            })
            .collect()
    }
}

/// [T, T]: 0 where a query may look (at its own position and before), a large negative
/// number where it may not, so that the softmax gives those keys no weight.
fn causal_mask(t: usize, device: &crate::Device) -> Result<Tensor> {
    let values = (0..t * t)
        .map(|i| if i % t > i / t { -1e9 } else { 0.0 })
        .collect();
    Tensor::from_vec(values, &[t, t], device)
}

/// q, k and v of one sequence's packed [1, T, 3C], each [heads, T, head width].
fn attention_heads(qkv: &Tensor, heads: usize) -> Result<[Tensor; 3]> {
    // Stored in f16 where the training's attention reads it so.
    let qkv = &qkv.to_f32()?;
    let (t, c) = (qkv.shape()[1], qkv.shape()[2] / 3);
    let per_head = |start: usize| {
        qkv.slice(2, start, c)?
            .reshape(&[t, heads, c / heads])?
            .permute(&[1, 0, 2])
    };
    Ok([per_head(0)?, per_head(c)?, per_head(2 * c)?])
}

/// softmax(q·kᵀ/√d + mask) per head, from one sequence's packed q, k and v [1, T, 3C]: the
/// weights the fused attention kernels use without keeping them.
fn attention_weights(qkv: &Tensor, mask: &Tensor, heads: usize) -> Result<Tensor> {
    let d = qkv.shape()[2] / 3 / heads;
    let [q, k, _] = attention_heads(qkv, heads)?;
    q.matmul_t(&k, false, true)?
        .scale(1.0 / (d as f32).sqrt())?
        .add(mask)?
        .softmax()
}
