//! A training session: one model, its optimizer and data; steps, evaluation, sampling and
//! checkpoints. The CLI and the page both drive exactly this.

mod adapters;
mod best;
mod checkpoint;
mod config;
mod flow;
mod footprint;
mod hf_gpt2;
mod histograms;
mod insides;
mod kept;
mod learner;
mod peft;
pub mod routing;
mod sample;
mod smoothing;
mod stats;
mod task;

pub use best::{BestKeeper, Verdict};
pub use checkpoint::{assign_all, Checkpoint, CHECKPOINT_FORMAT, MAX_HEADER_BYTES};
pub use config::{gpt2_schedule, Config, Family, ModelConfig, GPT2_STEPS, GPT2_WINDOW};
pub use flow::{Flow, LayerFlow};
pub use footprint::{Footprint, Part};
pub use hf_gpt2::{hf_config_json, is_hf_gpt2, load_hf, save_hf, HfGpt2};
pub use histograms::{Histogram, BINS};
pub use insides::Inside;
use learner::Learner;
pub use learner::{Net, TaskData};
pub use peft::{load_hf_adapted, PeftAdapters};
pub use task::Task;

use crate::data::{spread_windows, windows, Batches, Labelled, Text};
use crate::nn::{Gpt, Init, Model};
use crate::optim::Optimizer;
use crate::{no_grad, Device, Error, Result, Tensor};
pub use sample::{sample, SampleSettings, Sampled, Sampler};
pub use smoothing::smooth;
use stats::mean_and_standard_error;

/// Validation examples evaluated per forward pass: bounds the activations of a large split.
const EVAL_CHUNK: usize = 500;
/// A text evaluation's batches: each spans the whole split, and their spread gives its noise.
const EVAL_BATCHES: usize = 16;

/// Validation figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Eval {
    pub loss: f32,
    /// Fraction right, for classification tasks.
    pub accuracy: Option<f32>,
    /// Standard error of a text evaluation's loss: how far it may lie from the loss over the
    /// whole validation split.
    pub noise: Option<f32>,
}

/// One training run.
pub struct Session {
    pub config: Config,
    device: Device,
    learner: Learner,
    /// The parameters that train, and those frozen (LoRA's base), by their PyTorch names.
    params: Vec<(String, Tensor)>,
    frozen: Vec<(String, Tensor)>,
    optimizer: Optimizer,
    batches: Batches,
    /// Steps taken.
    pub step: u64,
    /// The loss of the latest step, still on the GPU.
    last_loss: Option<Tensor>,
    /// The weights the latest step's loss was computed from (copied before its update).
    tried: kept::Kept,
    /// The last weights whose loss was read back finite, to fall back on, and the step they
    /// are of (the updates made to them).
    good: kept::Kept,
    good_step: u64,
    /// Whether the next step keeps its gradient norms (see `flow`).
    watch: bool,
    /// The latest watched step and its squared gradient norm per layer, on the device.
    watched: Option<(u64, Tensor)>,
}

impl Session {
    /// A new run of `config` on `data` on `device`; checks everything before allocating.
    pub fn new(config: Config, data: TaskData, device: &Device) -> Result<Session> {
        let init = Init::new(config.seed, device);
        Session::built(config, data, device, init)
    }

    /// As `new`, for a LoRA run whose base is loaded next (`load`, `load_gpt2_base`): the
    /// base is made as zeros rather than drawn (GPT-2 124M's draws take seconds).
    pub fn for_base(config: Config, data: TaskData, device: &Device) -> Result<Session> {
        let init = Init::for_loading_base(config.seed, device);
        Session::built(config, data, device, init)
    }

    fn built(
        mut config: Config,
        data: TaskData,
        device: &Device,
        mut init: Init,
    ) -> Result<Session> {
        config.check()?;
        if let Device::Gpu(gpu) = device {
            config.frozen_f16 |= gpu.frozen_f16();
        }
        init.hold_frozen_in_f16(config.frozen_f16);
        // Before the footprint: a batch larger than the data is the cause, not its size.
        let examples = data.examples();
        if config.batch > examples {
            return Err(Error::Invalid {
                op: "settings",
                why: format!(
                    "the batch of {} is larger than the {examples} training examples",
                    config.batch
                ),
            });
        }
        Footprint::of(&config).check(device)?;
        let learner = Learner::new(&config, data, &mut init)?;
        let batches = Batches::new(examples, config.seed);
        let (params, frozen): (Vec<_>, Vec<_>) = learner
            .model()
            .parameters()
            .into_iter()
            .partition(|(_, p)| p.requires_grad());
        let optimizer = Optimizer::for_device(config.optimizer.clone(), &params, device)?;
        let good = kept::Kept::new(&params)?;
        let tried = kept::Kept::new(&params)?;
        Ok(Session {
            config,
            device: device.clone(),
            learner,
            params,
            frozen,
            optimizer,
            batches,
            step: 0,
            last_loss: None,
            tried,
            good,
            good_step: 0,
            watch: false,
            watched: None,
        })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The loss scale, where products in f16 have the losses scaled: from the first step whose
    /// forward ran a product on the matrix units, None before and in a model whose products are
    /// all too small for them (`Optimizer::for_device`).
    pub fn loss_scale(&self) -> Option<&crate::optim::LossScale> {
        self.optimizer.loss_scale()
    }

    /// The same run on another device (after the first was lost), from `checkpoint`, the bytes
    /// of an earlier `save`: the model is built again on `device` and given those weights and
    /// optimizer state, so training goes on from the checkpoint's step as if never stopped.
    pub fn resume_on(self, device: &Device, checkpoint: &[u8]) -> Result<Session> {
        let mut session = Session::new(self.config, self.learner.into_data(), device)?;
        session.load(checkpoint)?;
        Ok(session)
    }

    /// The labelled examples of a classifier's session.
    pub fn labelled(&self) -> Option<&Labelled> {
        match &self.learner {
            Learner::Classifier { data, .. } => Some(data),
            Learner::Text { .. } => None,
        }
    }

    /// The text of a GPT's session.
    pub fn text(&self) -> Option<&Text> {
        match &self.learner {
            Learner::Text { data, .. } => Some(data),
            Learner::Classifier { .. } => None,
        }
    }

    /// Named parameters (PyTorch names).
    pub fn parameters(&self) -> &[(String, Tensor)] {
        &self.params
    }

    /// Number of trainable values.
    pub fn parameter_count(&self) -> usize {
        self.params.iter().map(|(_, p)| p.numel()).sum()
    }

    /// Tokens in each window of a GPT's text (`Config::text_window`; 0 for other models).
    fn window(&self) -> usize {
        self.config.text_window().unwrap_or(0)
    }

    /// Tokens (text) or examples per step.
    pub fn items_per_step(&self) -> usize {
        match &self.learner {
            Learner::Text { .. } => self.config.batch * self.window(),
            Learner::Classifier { .. } => self.config.batch,
        }
    }

    /// The next training batch as (inputs, targets) tensors.
    fn next_batch(&mut self) -> Result<(Tensor, Tensor)> {
        let b = self.config.batch;
        match &self.learner {
            Learner::Classifier { data: d, .. } => {
                let (x, y) = d.train.gather(&self.batches.batch(self.step, b));
                Ok((
                    Tensor::from_vec(x, &[b, d.train.features], &self.device)?,
                    Tensor::from_u32(y, &[b], &self.device)?,
                ))
            }
            Learner::Text { data, .. } => {
                let context = self.window();
                let (x, y) = windows(&data.train, b, context, self.config.seed, self.step);
                Ok((
                    Tensor::from_u32(x, &[b, context], &self.device)?,
                    Tensor::from_u32(y, &[b * context], &self.device)?,
                ))
            }
        }
    }

    /// One step: forward, loss, backward and update, recorded and submitted (a short step
    /// together with the next ones, see `Gpu::step_recorded`). The loss is not read back (see
    /// `check`).
    pub fn train_step(&mut self) -> Result<()> {
        let (x, y) = self.next_batch()?;
        let seed = self.dropout_seed();
        self.optimizer.forward_begins();
        let loss = self.learner.model().loss(&x, &y, Some(seed))?;
        let grads = self.optimizer.backward(&loss)?;
        if std::mem::take(&mut self.watch) {
            let mut squares = flow::gradient_squares(&self.params, &grads, &self.device)?;
            if let Some(scale) = self.optimizer.loss_scale() {
                squares = scale.unscaled_squares(&squares)?;
            }
            self.watched = Some((self.step + 1, squares));
        }
        // Keep the weights this loss came from: they are the fallback if it turns out finite.
        self.tried.take()?;
        self.optimizer.step(&self.params, &grads)?;
        drop(grads);
        if let Device::Gpu(g) = &self.device {
            g.step_recorded();
        }
        self.last_loss = Some(loss.detach());
        self.step += 1;
        Ok(())
    }

    /// The dropout seed of the current step: from the run's seed and the step, so that a run
    /// repeats itself and no two steps share masks.
    fn dropout_seed(&self) -> u32 {
        let mixed = self.config.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ self.step;
        (mixed ^ (mixed >> 32)) as u32
    }

    /// Reads the latest training loss back. If it is finite, the weights it was computed from
    /// become the fallback. If it is NaN or infinite, the weights go back to that fallback, the
    /// optimizer's state (poisoned by the bad gradients) starts afresh, and the error says so.
    pub async fn check(&mut self) -> Result<f32> {
        let Some(loss) = &self.last_loss else {
            return Err(Error::Invalid {
                op: "train",
                why: "no step was taken yet".into(),
            });
        };
        let value = loss.to_vec().await?[0];
        if !value.is_finite() {
            self.fall_back()?;
            return Err(Error::Diverged {
                what: "loss",
                value,
                step: self.step,
            });
        }
        self.good.take_from(&self.tried)?;
        // `tried` holds the weights before the latest update.
        self.good_step = self.step - 1;
        Ok(value)
    }

    /// Puts the last good weights back, with their step (so that a checkpoint of them is
    /// labelled with the step they are of), and clears the optimizer's state.
    fn fall_back(&mut self) -> Result<()> {
        self.good.put_back()?;
        self.step = self.good_step;
        self.last_loss = None;
        self.optimizer.reset()
    }

    /// Loss (and accuracy) on the validation split: all of it for classification, a fixed set
    /// of windows for text. A loss that is not finite is an error (the run diverged).
    pub async fn evaluate(&mut self) -> Result<Eval> {
        let eval = self.measure().await?;
        if !eval.loss.is_finite() {
            self.fall_back()?;
            return Err(Error::Diverged {
                what: "validation loss",
                value: eval.loss,
                step: self.step,
            });
        }
        Ok(eval)
    }

    async fn measure(&self) -> Result<Eval> {
        match &self.learner {
            Learner::Classifier { model, data } => self.measure_labelled(model, data).await,
            Learner::Text { model, data } => self.measure_text(model, data).await,
        }
    }

    /// Loss and accuracy over the whole validation split, `EVAL_CHUNK` examples at a time.
    async fn measure_labelled(&self, model: &Net, d: &Labelled) -> Result<Eval> {
        let (mut loss_sum, mut right, n) = (0.0f64, 0usize, d.val.len());
        for start in (0..n).step_by(EVAL_CHUNK) {
            let idx: Vec<usize> = (start..(start + EVAL_CHUNK).min(n)).collect();
            let (x, y) = d.val.gather(&idx);
            let rows = idx.len();
            let xt = Tensor::from_vec(x, &[rows, d.val.features], &self.device)?;
            let yt = Tensor::from_u32(y.clone(), &[rows], &self.device)?;
            let (loss, pred) = no_grad(|| -> Result<_> {
                let logits = model.forward(&xt)?;
                Ok((logits.cross_entropy(&yt)?, logits.argmax(1)?))
            })?;
            loss_sum += loss.to_vec().await?[0] as f64 * rows as f64;
            let pred = pred.to_vec_u32().await?;
            right += pred.iter().zip(&y).filter(|(p, t)| p == t).count();
        }
        Ok(Eval {
            loss: (loss_sum / n as f64) as f32,
            accuracy: Some(right as f32 / n as f32),
            noise: None,
        })
    }

    /// Mean loss over the same validation windows every time, so that evaluations compare,
    /// with its standard error from the spread of the batch means (each batch spans the split).
    async fn measure_text(&self, model: &Gpt, t: &Text) -> Result<Eval> {
        let context = self.window();
        // No more tokens than the split holds: a short text's windows would only repeat.
        let predicted = self.config.eval_chars.min(t.val.len());
        let rows = (predicted / (EVAL_BATCHES * context)).max(1);
        let mut losses = Vec::with_capacity(EVAL_BATCHES);
        // An evaluation batch goes through in parts of at most the training batch: its logits
        // (rows × context × vocabulary) then fit wherever training's do.
        let part = self.config.batch.clamp(1, rows) * context;
        for b in 0..EVAL_BATCHES {
            let (x, y) = spread_windows(&t.val, rows, EVAL_BATCHES, context, b);
            let mut loss: Option<Tensor> = None;
            for (xs, ys) in x.chunks(part).zip(y.chunks(part)) {
                let n = xs.len() / context;
                let xt = Tensor::from_u32(xs.to_vec(), &[n, context], &self.device)?;
                let yt = Tensor::from_u32(ys.to_vec(), &[n * context], &self.device)?;
                let part = no_grad(|| model.loss(&xt, &yt, None)?.scale(n as f32 / rows as f32))?;
                loss = Some(match loss {
                    Some(sum) => no_grad(|| sum.add(&part))?,
                    None => part,
                });
            }
            let loss = loss.expect("at least one row");
            losses.push(no_grad(|| loss.reshape(&[1]))?);
        }
        // One readback for all the batches.
        let losses = no_grad(|| Tensor::concat(&losses, 0))?.to_vec().await?;
        let (loss, noise) = mean_and_standard_error(&losses);
        Ok(Eval {
            loss,
            accuracy: None,
            noise: Some(noise),
        })
    }

    /// The validation loss of this session's GPT on another text of the same vocabulary (the
    /// same windows every time): after LoRA fine-tuning, how much of the base's text the model
    /// still knows.
    pub async fn loss_on(&self, text: &Text) -> Result<f32> {
        let Learner::Text { model, data } = &self.learner else {
            return Err(Error::Invalid {
                op: "evaluate",
                why: "only a GPT reads text".into(),
            });
        };
        if data.tokenizer != text.tokenizer {
            return Err(Error::Invalid {
                op: "evaluate",
                why: "the text has other tokens than the model's".into(),
            });
        }
        Ok(self.measure_text(model, text).await?.loss)
    }

    /// Class probabilities of a batch of inputs [n, features], for the page's views.
    pub async fn predict(&self, x: Vec<f32>, n: usize) -> Result<Vec<f32>> {
        let features = x.len() / n.max(1);
        let xt = Tensor::from_vec(x, &[n, features], &self.device)?;
        no_grad(|| self.learner.model().forward(&xt)?.softmax())?
            .to_vec()
            .await
    }
}
