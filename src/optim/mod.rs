//! Optimizers that run on the GPU: SGD (momentum, Nesterov), Adam and AdamW, with weight decay,
//! clipping by global gradient norm and a learning-rate schedule. On the GPU the parameters
//! live in flat buffers (flat.rs) and one fused kernel updates each buffer in place; the state
//! lives beside the parameters; nothing is read back.

mod flat;
mod gather;
mod kernels;
mod loss_scale;
mod schedule;

pub use loss_scale::{LossScale, GROWTH_INTERVAL, INITIAL_SCALE};
pub use schedule::{Schedule, ScheduleKind};

use crate::gpu::Binding;
use crate::ops::{gpu_of, ProductPath};
use crate::{no_grad, Device, Error, Gpu, Gradients, Result, Tensor};
use serde::{Deserialize, Serialize};
use std::rc::Rc;

/// Which update rule, with its own settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Rule {
    Sgd {
        momentum: f32,
        nesterov: bool,
    },
    Adam {
        beta1: f32,
        beta2: f32,
        eps: f32,
    },
    /// Adam with decoupled weight decay.
    AdamW {
        beta1: f32,
        beta2: f32,
        eps: f32,
    },
}

crate::setting_enum! {
    /// The update rules by name, as the command line and the page choose them.
    pub enum RuleKind {
        Sgd,
        Adam,
        AdamW,
    }
}

impl RuleKind {
    /// The rule with PyTorch's default settings.
    pub fn defaults(self) -> Rule {
        match self {
            RuleKind::Sgd => Rule::Sgd {
                momentum: 0.9,
                nesterov: false,
            },
            RuleKind::Adam => Rule::Adam {
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
            },
            RuleKind::AdamW => Rule::AdamW {
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
            },
        }
    }
}

impl Rule {
    pub fn kind(&self) -> RuleKind {
        match self {
            Rule::Sgd { .. } => RuleKind::Sgd,
            Rule::Adam { .. } => RuleKind::Adam,
            Rule::AdamW { .. } => RuleKind::AdamW,
        }
    }
}

/// Which parameters weight decay shrinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecayScope {
    /// Every parameter (torch.optim with one parameter group).
    #[default]
    All,
    /// Weight matrices and embeddings (parameters of two or more dimensions), not biases or
    /// LayerNorm parameters: nanoGPT's two parameter groups.
    Matrices,
}

/// Everything that defines an optimizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimizerConfig {
    pub rule: Rule,
    pub lr: f32,
    pub weight_decay: f32,
    /// Which parameters the weight decay applies to (all, in checkpoints from before it).
    #[serde(default)]
    pub decay: DecayScope,
    /// Clip the global gradient norm to this, if set.
    pub clip: Option<f32>,
    pub schedule: Schedule,
}

impl OptimizerConfig {
    /// Switches to the rule `kind` with its standard settings; the same kind as now keeps the
    /// current settings (a recipe's own beta2, say).
    pub fn use_rule(&mut self, kind: RuleKind) {
        if kind != self.rule.kind() {
            self.rule = kind.defaults();
        }
    }

    /// Whether weight decay applies to a parameter of this shape.
    pub fn decays(&self, shape: &[usize]) -> bool {
        match self.decay {
            DecayScope::All => true,
            DecayScope::Matrices => shape.len() >= 2,
        }
    }

    pub fn check(&self) -> Result<()> {
        let bad = |why: &str| {
            Err(Error::Invalid {
                op: "optimizer",
                why: why.into(),
            })
        };
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return bad("the learning rate must be a positive number");
        }
        // NaN fails both comparisons, so it is refused too.
        if self.weight_decay.is_nan() || self.weight_decay < 0.0 {
            return bad("the weight decay must not be negative");
        }
        if matches!(self.clip, Some(c) if c.is_nan() || c <= 0.0) {
            return bad("the clipping norm must be positive");
        }
        Ok(())
    }
}

/// Optimizer state: the step count and, per parameter, its moment buffers.
pub struct Optimizer {
    pub config: OptimizerConfig,
    pub step: u64,
    /// Per parameter: momentum buffer (SGD) or first and second moments (Adam).
    pub state: Vec<Vec<Tensor>>,
    /// On the GPU: the parameters, their gradients and this state in flat buffers.
    flat: Option<flat::Flat>,
    /// The squared gradient norm the update reads when nothing is clipped: a zero, made once.
    zero: Option<Tensor>,
    /// The loss scale of mixed precision, where the run scales its losses (`scale_losses`).
    loss_scale: Option<LossScale>,
    /// In a run that asked for f16 products: its GPU and the products it had run on the matrix
    /// units when the latest forward began (`forward_begins`). Losses are scaled from the first
    /// backward whose forward ran one more (`for_device`).
    scale_once_f16: Option<(Rc<Gpu>, u64)>,
}

impl Optimizer {
    pub fn new(config: OptimizerConfig, params: &[(String, Tensor)]) -> Result<Optimizer> {
        config.check()?;
        let slots = if matches!(config.rule, Rule::Sgd { .. }) {
            1
        } else {
            2
        };
        let gpu = params
            .first()
            .and_then(|(_, p)| gpu_of(p.device()).cloned());
        let (flat, state) = match gpu {
            Some(gpu) => {
                let decays = |p: &Tensor| config.decays(p.shape());
                let (flat, state) = flat::Flat::new(&gpu, params, slots, decays)?;
                (Some(flat), state)
            }
            None => {
                let zeros = |p: &Tensor| {
                    (0..slots)
                        .map(|_| Tensor::zeros(p.shape(), p.device()))
                        .collect::<Result<Vec<_>>>()
                };
                let state = params
                    .iter()
                    .map(|(_, p)| zeros(p))
                    .collect::<Result<_>>()?;
                (None, state)
            }
        };
        Ok(Optimizer {
            config,
            step: 0,
            state,
            flat,
            zero: None,
            loss_scale: None,
            scale_once_f16: None,
        })
    }

    /// `new`, its losses scaled with PyTorch's defaults where `device`'s products round their
    /// operands to f16 (`Gpu::set_precision`): from the first backward whose forward ran a
    /// product on the matrix units (the forward's start told by `forward_begins`; products of
    /// other passes, an evaluation's or a view's, do not count). A model all of whose products
    /// are too small for them (src/ops/matmul/plan.rs) computes in f32 and skips the scale's
    /// kernels: with them the spiral's MLP took about 2,700 steps a second in Chrome on an H200
    /// instead of 3,900.
    pub fn for_device(
        config: OptimizerConfig,
        params: &[(String, Tensor)],
        device: &Device,
    ) -> Result<Optimizer> {
        let mut optimizer = Optimizer::new(config, params)?;
        if let Device::Gpu(g) = device {
            if g.tuning().f16_products.is_some() {
                optimizer.scale_once_f16 = Some((g.clone(), f16_products(g)));
            }
        }
        Ok(optimizer)
    }

    /// Starts scaling the losses where products ran on the matrix units since the latest
    /// forward began: at backward, the forward's; after the update, the backward's too (its
    /// products' layouts can take the matrix units where the forward's did not), for the steps
    /// after.
    fn scale_after_f16_products(&mut self) -> Result<()> {
        if let Some((gpu, before)) = &self.scale_once_f16 {
            if f16_products(gpu) > *before {
                self.scale_once_f16 = None;
                self.scale_losses(INITIAL_SCALE, GROWTH_INTERVAL)?;
            }
        }
        Ok(())
    }

    /// Marks the start of the forward pass whose loss `backward` takes next.
    pub fn forward_begins(&mut self) {
        if let Some((gpu, before)) = &mut self.scale_once_f16 {
            *before = f16_products(gpu);
        }
    }

    /// The gradients of `loss`, from the loss times the loss scale where losses are scaled.
    pub fn backward(&mut self, loss: &Tensor) -> Result<Gradients> {
        self.scale_after_f16_products()?;
        match &self.loss_scale {
            Some(scale) => scale.scaled(loss)?.backward(),
            None => loss.backward(),
        }
    }

    /// Forgets the moments and the step count (after a divergence).
    pub fn reset(&mut self) -> Result<()> {
        for t in self.state.iter().flatten() {
            t.assign(&vec![0.0; t.numel()])?;
        }
        self.step = 0;
        Ok(())
    }

    /// The learning rate of the next step.
    pub fn lr(&self) -> f32 {
        self.config.lr * self.config.schedule.factor(self.step)
    }

    /// Names of the state tensors, for checkpoints: "{param}.momentum", "{param}.exp_avg", ...
    pub fn state_names(&self, params: &[(String, Tensor)]) -> Vec<(String, Tensor)> {
        let slots: &[&str] = if matches!(self.config.rule, Rule::Sgd { .. }) {
            &["momentum_buffer"]
        } else {
            &["exp_avg", "exp_avg_sq"]
        };
        params
            .iter()
            .zip(&self.state)
            .flat_map(|((name, _), st)| {
                slots
                    .iter()
                    .zip(st)
                    .map(move |(s, t)| (format!("{name}.{s}"), t.clone()))
            })
            .collect()
    }

    /// Scales the losses from now on (`LossScale`), on the GPU only: backward then starts from
    /// `loss_scale().scaled(loss)`, and `step` unscales the gradients, skipping a step whose
    /// gradients overflowed.
    pub fn scale_losses(&mut self, initial: f32, growth_interval: u32) -> Result<()> {
        let device = self
            .state
            .iter()
            .flatten()
            .next()
            .map(|t| t.device().clone());
        let Some(device @ Device::Gpu(_)) = device else {
            return Err(Error::Invalid {
                op: "optimizer",
                why: "losses are scaled on the GPU only".into(),
            });
        };
        self.loss_scale = Some(LossScale::new(&device, initial, growth_interval)?);
        Ok(())
    }

    /// The loss scale, where losses are scaled.
    pub fn loss_scale(&self) -> Option<&LossScale> {
        self.loss_scale.as_ref()
    }

    /// Updates every parameter in place from its gradient.
    pub fn step(&mut self, params: &[(String, Tensor)], grads: &Gradients) -> Result<()> {
        no_grad(|| {
            let grads: Vec<Tensor> = params
                .iter()
                .map(|(name, p)| gradient_of(name, p, grads))
                .collect::<Result<_>>()?;
            let device = params
                .first()
                .map(|(_, p)| p.device().clone())
                .unwrap_or(Device::Cpu);
            if let (Some(flat), Some(gpu)) = (&self.flat, gpu_of(&device)) {
                flat.gather(gpu, &grads)?;
            }
            // On the GPU the flat gradients, whose gaps are zero, stand for all gradients.
            let summed: Vec<Tensor> = match &self.flat {
                Some(flat) => flat.groups.iter().map(|g| g.grads.clone()).collect(),
                None => grads.clone(),
            };
            let norm_sq = match (&self.loss_scale, self.config.clip, &self.zero) {
                (Some(scale), _, _) => scale.record(&squared_norm(&summed, &device)?)?,
                (None, Some(_), _) => squared_norm(&summed, &device)?,
                (None, None, Some(zero)) => zero.clone(),
                (None, None, None) => self.zero.insert(Tensor::zeros(&[1], &device)?).clone(),
            };
            let lr = self.lr();
            self.step += 1;
            match &self.flat {
                Some(flat) => {
                    for group in &flat.groups {
                        let wd = self.weight_decay(group.decays);
                        let (p, g) = (&group.params, &group.grads);
                        self.update(p, g, &group.state, &norm_sq, (lr, wd))?;
                    }
                }
                None => {
                    for (((_, p), g), st) in params.iter().zip(&grads).zip(&self.state) {
                        let wd = self.weight_decay(self.config.decays(p.shape()));
                        self.update(p, g, st, &norm_sq, (lr, wd))?;
                    }
                }
            }
            // After this update, which read no scale: the next steps' losses are scaled.
            self.scale_after_f16_products()
        })
    }

    /// The weight decay of a parameter that `decays` or not.
    fn weight_decay(&self, decays: bool) -> f32 {
        if decays {
            self.config.weight_decay
        } else {
            0.0
        }
    }

    /// Updates `p` from its gradient `g` and state `st` with learning rate and weight decay
    /// `(lr, wd)`.
    fn update(
        &self,
        p: &Tensor,
        g: &Tensor,
        st: &[Tensor],
        norm_sq: &Tensor,
        (lr, wd): (f32, f32),
    ) -> Result<()> {
        let n = p.numel();
        let Some(gpu) = gpu_of(p.device()) else {
            return self.update_cpu(p, g, st, norm_sq, (lr, wd));
        };
        let (gb, nb, pb) = (
            g.buffer("optimizer")?,
            norm_sq.buffer("optimizer")?,
            p.buffer("optimizer")?,
        );
        let state: Vec<crate::gpu::BufferRef> = st
            .iter()
            .map(|s| s.buffer("optimizer"))
            .collect::<Result<_>>()?;
        let mut bindings = vec![Binding::read(&gb), Binding::read(&nb), Binding::write(&pb)];
        bindings.extend(state.iter().map(Binding::write));
        let step = self.step as i32;
        let scaled = self.loss_scale.is_some();
        kernels::record_update(gpu, &self.config, (step, n, lr, wd, scaled), &bindings)
    }

    /// The same update on the CPU backend, in f64.
    fn update_cpu(
        &self,
        p: &Tensor,
        g: &Tensor,
        st: &[Tensor],
        norm_sq: &Tensor,
        (lr, wd): (f32, f32),
    ) -> Result<()> {
        let c = &self.config;
        let clip = match c.clip {
            Some(m) => (m as f64 / (norm_sq.host_f64("optimizer")?[0].sqrt() + 1e-6)).min(1.0),
            None => 1.0,
        };
        let g: Vec<f64> = g.host_f64("optimizer")?.iter().map(|v| v * clip).collect();
        let (lr, wd, t) = (lr as f64, wd as f64, self.step as i32);
        match c.rule {
            Rule::Sgd { momentum, nesterov } => {
                let mom = momentum as f64;
                let mut buf = st[0].host_f64("optimizer")?;
                p.update_host("optimizer", |w| {
                    for i in 0..w.len() {
                        let mut gi = g[i] + wd * w[i];
                        if mom != 0.0 {
                            buf[i] = if t == 1 { gi } else { mom * buf[i] + gi };
                            gi = if nesterov { gi + mom * buf[i] } else { buf[i] };
                        }
                        w[i] -= lr * gi;
                    }
                })?;
                st[0].update_host("optimizer", |b| b.copy_from_slice(&buf))
            }
            Rule::Adam { beta1, beta2, eps } | Rule::AdamW { beta1, beta2, eps } => {
                let decoupled = matches!(c.rule, Rule::AdamW { .. });
                let (b1, b2, eps) = (beta1 as f64, beta2 as f64, eps as f64);
                let (mut m, mut v) = (st[0].host_f64("optimizer")?, st[1].host_f64("optimizer")?);
                let (bc1, bc2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
                p.update_host("optimizer", |w| {
                    for i in 0..w.len() {
                        let mut gi = g[i];
                        if decoupled {
                            w[i] *= 1.0 - lr * wd;
                        } else {
                            gi += wd * w[i];
                        }
                        m[i] = b1 * m[i] + (1.0 - b1) * gi;
                        v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
                        w[i] -= lr / bc1 * m[i] / (v[i].sqrt() / bc2.sqrt() + eps);
                    }
                })?;
                st[0].update_host("optimizer", |b| b.copy_from_slice(&m))?;
                st[1].update_host("optimizer", |b| b.copy_from_slice(&v))
            }
        }
    }
}

/// The gradient of parameter `p` (called `name`): an error if there is none or if its shape is
/// not the parameter's (on the GPU it would spill into its neighbours' places).
fn gradient_of(name: &str, p: &Tensor, grads: &Gradients) -> Result<Tensor> {
    let g = grads.get(p).ok_or_else(|| Error::Invalid {
        op: "optimizer",
        why: format!("{name} has no gradient"),
    })?;
    if g.shape() != p.shape() {
        return Err(Error::Shape {
            op: "optimizer",
            a: p.shape().to_vec(),
            b: g.shape().to_vec(),
            why: format!("{name}'s gradient must have its shape"),
        });
    }
    Ok(g.clone())
}

/// Σ g·g over `grads` (a sum per tensor, then their sum), as one element.
fn squared_norm(grads: &[Tensor], device: &Device) -> Result<Tensor> {
    let mut sums = grads.iter().map(|g| g.mul(g)?.sum_all());
    let first = sums.next().unwrap_or_else(|| Tensor::zeros(&[1], device))?;
    sums.try_fold(first, |acc, s| acc.add(&s?))
}

/// Products `gpu` has run in f16 so far.
fn f16_products(gpu: &Gpu) -> u64 {
    ProductPath::F16
        .iter()
        .map(|p| gpu.dispatches_of(p.family()))
        .sum()
}
