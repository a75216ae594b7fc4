//! The basic layers: Linear, Conv2d, LayerNorm, Embedding and the activations.

use super::{Init, Module};
use crate::{Result, Tensor};

/// y = x Wᵀ + b, with W [out, in] as in torch.nn.Linear; with an adapter, LoRA's
/// y = x Wᵀ + b + s · x Aᵀ Bᵀ.
#[derive(Clone)]
pub struct Linear {
    pub weight: Tensor,
    pub bias: Option<Tensor>,
    pub adapter: Option<Adapter>,
}

/// LoRA's low-rank update of a (frozen) Linear: `a` [r, in] and `b` [out, r], PEFT's lora_A
/// and lora_B weights, and the scale α / r.
#[derive(Clone)]
pub struct Adapter {
    pub a: Tensor,
    pub b: Tensor,
    pub scale: f32,
}

impl Adapter {
    /// PEFT's init: A as a Linear(in, r) (U(±1/sqrt(in))), B zero, so that a new adapter
    /// changes nothing until it is trained.
    pub fn new(init: &mut Init, linear: &Linear, rank: usize, alpha: f32) -> Result<Adapter> {
        let (outputs, inputs) = (linear.weight.shape()[0], linear.weight.shape()[1]);
        Ok(Adapter {
            a: init.uniform(&[rank, inputs], 1.0 / (inputs as f64).sqrt())?,
            b: init.constant(&[outputs, rank], 0.0)?,
            scale: alpha / rank as f32,
        })
    }
}

impl Linear {
    /// PyTorch's default init: U(±1/sqrt(in)) for weight and bias.
    pub fn new(init: &mut Init, inputs: usize, outputs: usize, bias: bool) -> Result<Linear> {
        let bound = 1.0 / (inputs as f64).sqrt();
        let weight = init.uniform(&[outputs, inputs], bound)?;
        let bias = if bias {
            Some(init.uniform(&[outputs], bound)?)
        } else {
            None
        };
        Ok(Linear {
            weight,
            bias,
            adapter: None,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match &self.adapter {
            None => x.linear(&self.weight, self.bias.as_ref()),
            Some(a) => x.lora_linear(&self.weight, self.bias.as_ref(), (&a.a, &a.b), a.scale),
        }
    }

    /// `self.forward(x)` as the packed q, k and v of attention with `heads` heads: stored in
    /// f16 where that attention reads them so (`Tensor::attention_reads_f16`; not under an
    /// adapter, whose sum is f32).
    pub fn forward_packed_qkv(&self, x: &Tensor, heads: usize) -> Result<Tensor> {
        let mut shape = x.shape().to_vec();
        if let Some(last) = shape.last_mut() {
            *last = self.weight.shape()[0];
        }
        let halves = Tensor::attention_reads_f16(x.device(), &shape, heads);
        match (&self.adapter, halves) {
            (None, true) => x.linear_halves(&self.weight, self.bias.as_ref()),
            _ => self.forward(x),
        }
    }

    /// `self.forward(x)` through `activation`: ReLU in the product's store without an adapter
    /// (`Tensor::linear_relu`), the others as a pass of their own.
    pub fn forward_activated(&self, x: &Tensor, activation: Activation) -> Result<Tensor> {
        match (&self.adapter, activation) {
            (None, Activation::Relu) => x.linear_relu(&self.weight, self.bias.as_ref()),
            _ => activation.apply(&self.forward(x)?),
        }
    }

    /// `residual + self.forward(x)` in one kernel: the residual added as the product is stored.
    pub fn forward_residual(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        let (w, bias) = (&self.weight, self.bias.as_ref());
        match &self.adapter {
            None => x.linear_residual(w, bias, residual),
            Some(a) => x.lora_linear_residual(w, bias, (&a.a, &a.b), a.scale, residual),
        }
    }

    /// `residual + self.forward(x).dropout(p, seed)`, in one kernel without an adapter
    /// (`Tensor::linear_residual_dropout`).
    pub fn forward_residual_dropout(
        &self,
        x: &Tensor,
        residual: &Tensor,
        (p, seed): (f32, u32),
    ) -> Result<Tensor> {
        match &self.adapter {
            None => {
                x.linear_residual_dropout((&self.weight, self.bias.as_ref()), residual, p, seed)
            }
            Some(_) => residual.add(&self.forward(x)?.dropout(p, seed)?),
        }
    }

    /// `self.forward(pre.gelu())`, the GELU's backward folded into the product's
    /// (`Tensor::gelu_linear`), an adapter's too (`Tensor::gelu_lora_linear`).
    pub fn forward_gelu(&self, pre: &Tensor) -> Result<Tensor> {
        let layer = (&self.weight, self.bias.as_ref());
        match &self.adapter {
            None => pre.gelu_linear(layer.0, layer.1),
            Some(a) => pre.gelu_lora_linear(layer, (&a.a, &a.b), a.scale, None),
        }
    }

    /// `residual + self.forward(pre.gelu())`, the GELU's backward folded into the product's
    /// (`Tensor::gelu_linear_residual`), an adapter's too.
    pub fn forward_gelu_residual(&self, pre: &Tensor, residual: &Tensor) -> Result<Tensor> {
        let layer = (&self.weight, self.bias.as_ref());
        match &self.adapter {
            None => pre.gelu_linear_residual(layer.0, layer.1, residual),
            Some(a) => pre.gelu_lora_linear(layer, (&a.a, &a.b), a.scale, Some(residual)),
        }
    }

    /// `residual + self.forward(pre.gelu()).dropout(p, seed)`, in one kernel without an
    /// adapter (`Tensor::gelu_linear_residual_dropout`).
    pub fn forward_gelu_residual_dropout(
        &self,
        pre: &Tensor,
        residual: &Tensor,
        (p, seed): (f32, u32),
    ) -> Result<Tensor> {
        let (w, bias) = (&self.weight, self.bias.as_ref());
        match &self.adapter {
            None => pre.gelu_linear_residual_dropout((w, bias), residual, p, seed),
            Some(_) => residual.add(&self.forward(&pre.gelu()?)?.dropout(p, seed)?),
        }
    }
}

impl Module for Linear {
    /// torch.nn.Linear's names, and PEFT's for an adapter (lora_A.weight, lora_B.weight).
    fn parameters(&self) -> Vec<(String, Tensor)> {
        let mut p = vec![("weight".to_string(), self.weight.clone())];
        p.extend(self.bias.iter().map(|b| ("bias".to_string(), b.clone())));
        if let Some(a) = &self.adapter {
            p.push(("lora_A.weight".to_string(), a.a.clone()));
            p.push(("lora_B.weight".to_string(), a.b.clone()));
        }
        p
    }
}

/// torch.nn.Conv2d with square kernel, stride and padding.
pub struct Conv2d {
    pub weight: Tensor,
    pub bias: Tensor,
    pub stride: usize,
    pub padding: usize,
}

impl Conv2d {
    pub fn new(
        init: &mut Init,
        inputs: usize,
        outputs: usize,
        kernel: usize,
        stride: usize,
        padding: usize,
    ) -> Result<Conv2d> {
        let bound = 1.0 / ((inputs * kernel * kernel) as f64).sqrt();
        Ok(Conv2d {
            weight: init.uniform(&[outputs, inputs, kernel, kernel], bound)?,
            bias: init.uniform(&[outputs], bound)?,
            stride,
            padding,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.conv2d(&self.weight, Some(&self.bias), self.stride, self.padding)
    }

    /// `self.forward(x).relu()`, the ReLU in the convolution's store (`Tensor::conv2d_relu`).
    pub fn forward_relu(&self, x: &Tensor) -> Result<Tensor> {
        x.conv2d_relu(&self.weight, Some(&self.bias), self.stride, self.padding)
    }
}

impl Module for Conv2d {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        vec![
            ("weight".into(), self.weight.clone()),
            ("bias".into(), self.bias.clone()),
        ]
    }
}

/// PyTorch's default eps of its LayerNorm and RMSNorm.
const NORM_EPS: f32 = 1e-5;

/// torch.nn.LayerNorm over the last axis (eps 1e-5).
#[derive(Clone)]
pub struct LayerNorm {
    pub weight: Tensor,
    pub bias: Tensor,
}

impl LayerNorm {
    pub fn new(init: &mut Init, size: usize) -> Result<LayerNorm> {
        Ok(LayerNorm {
            weight: init.constant(&[size], 1.0)?,
            bias: init.constant(&[size], 0.0)?,
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.layernorm(&self.weight, &self.bias, NORM_EPS)
    }
}

impl Module for LayerNorm {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        vec![
            ("weight".into(), self.weight.clone()),
            ("bias".into(), self.bias.clone()),
        ]
    }
}

crate::setting_enum! {
    /// The normalisation a GPT's blocks use: LayerNorm (with a bias, GPT-2's) or RMSNorm
    /// (weight only, LLaMA's).
    #[derive(Default)]
    pub enum Norm {
        #[default]
        Layernorm,
        Rmsnorm,
    }
}

/// torch.nn.RMSNorm over the last axis (eps 1e-5).
#[derive(Clone)]
pub struct RmsNorm {
    pub weight: Tensor,
}

/// A normalisation layer of either kind.
#[derive(Clone)]
pub enum NormLayer {
    Layer(LayerNorm),
    Rms(RmsNorm),
}

impl NormLayer {
    pub fn new(kind: Norm, init: &mut Init, size: usize) -> Result<NormLayer> {
        Ok(match kind {
            Norm::Layernorm => NormLayer::Layer(LayerNorm::new(init, size)?),
            Norm::Rmsnorm => NormLayer::Rms(RmsNorm {
                weight: init.constant(&[size], 1.0)?,
            }),
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        match self {
            NormLayer::Layer(l) => l.forward(x),
            NormLayer::Rms(r) => x.rmsnorm(&r.weight, NORM_EPS),
        }
    }

    /// `next.forward(self.forward(x))`, a LayerNorm's output made in f16 where the layer's
    /// product reads it so (`Tensor::layernorm_into_linear`; not under an adapter, whose
    /// rank-wide product runs in f32).
    pub fn forward_into(&self, x: &Tensor, next: &Linear) -> Result<Tensor> {
        next.forward(&self.input_of(x, next)?)
    }

    /// `self.forward(x)` as `next`'s input: in f16 where `next`'s product reads it so (a
    /// LayerNorm's output, `Tensor::layernorm_into_linear`; not under an adapter).
    pub fn input_of(&self, x: &Tensor, next: &Linear) -> Result<Tensor> {
        match (self, &next.adapter) {
            (NormLayer::Layer(l), None) => {
                let outputs = next.weight.shape()[0];
                x.layernorm_into_linear((&l.weight, &l.bias, NORM_EPS), outputs)
            }
            _ => self.forward(x),
        }
    }
}

impl Module for NormLayer {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        match self {
            NormLayer::Layer(l) => l.parameters(),
            NormLayer::Rms(r) => vec![("weight".into(), r.weight.clone())],
        }
    }
}

/// torch.nn.Embedding.
pub struct Embedding {
    pub weight: Tensor,
}

impl Embedding {
    pub fn new(init: &mut Init, count: usize, size: usize, std: f64) -> Result<Embedding> {
        Ok(Embedding {
            weight: init.weight(&[count, size], std)?,
        })
    }

    pub fn forward(&self, indices: &Tensor) -> Result<Tensor> {
        self.weight.embedding(indices)
    }
}

impl Module for Embedding {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        vec![("weight".into(), self.weight.clone())]
    }
}

crate::setting_enum! {
    /// An elementwise activation; in settings, URLs and checkpoints by its lower-case name.
    pub enum Activation {
        Relu,
        Gelu,
        Tanh,
        Sigmoid,
    }
}

impl Activation {
    pub fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Activation::Relu => x.relu(),
            Activation::Gelu => x.gelu(),
            Activation::Tanh => x.tanh(),
            Activation::Sigmoid => x.sigmoid(),
        }
    }
}
