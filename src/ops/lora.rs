//! The low-rank adapted linear layer of LoRA: y = x·Wᵀ (+ b) + s·(x·Aᵀ)·Bᵀ with A [r, in],
//! B [out, r] (PEFT's lora_A and lora_B weights) and s = α / r. The base W and b are frozen in
//! fine-tuning, so backward computes only the input's and the adapters' gradients (see
//! MatMulOp::inputs): no product for W, the largest of a layer's three.

use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// `self.linear(weight, bias)` plus the adapter `scale · (self · aᵀ) · bᵀ`. The scale is
    /// applied to the rank-r intermediate, not the output, and the adapter's term is added as
    /// the base product is stored (its epilogue), so no pass reads or writes the output twice.
    pub fn lora_linear(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        adapter: (&Tensor, &Tensor),
        scale: f32,
    ) -> Result<Tensor> {
        let low = self.low_rank(weight, adapter, scale, false)?;
        added_as_stored(low, None, |term| self.linear_residual(weight, bias, term))
    }

    /// `residual + self.lora_linear(…)`, both added in the base product's epilogue.
    pub fn lora_linear_residual(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        adapter: (&Tensor, &Tensor),
        scale: f32,
        residual: &Tensor,
    ) -> Result<Tensor> {
        let low = self.low_rank(weight, adapter, scale, false)?;
        added_as_stored(low, Some(residual), |term| {
            self.linear_residual(weight, bias, term)
        })
    }

    /// `self.gelu().lora_linear(…)` (self the MLP's pre-activation), the GELU made for each
    /// product from the pre-activation (`Tensor::gelu_linear`), for the base's product and the
    /// adapter's A alike: no GELU op of the graph holds the activation (25 MB for GPT-2's MLP
    /// on 8 × 256 tokens in f32), only the products that read it, until their backward; with
    /// `residual`, `residual + …` as in `lora_linear_residual`.
    pub fn gelu_lora_linear(
        &self,
        (weight, bias): (&Tensor, Option<&Tensor>),
        adapter: (&Tensor, &Tensor),
        scale: f32,
        residual: Option<&Tensor>,
    ) -> Result<Tensor> {
        let low = self.low_rank(weight, adapter, scale, true)?;
        added_as_stored(low, residual, |term| {
            self.gelu_linear_residual(weight, bias, term)
        })
    }

    /// The adapter's term `scale · (self · aᵀ) · bᵀ`, its shapes checked against `weight`;
    /// with `gelu`, of `self.gelu()`.
    fn low_rank(
        &self,
        weight: &Tensor,
        (a, b): (&Tensor, &Tensor),
        scale: f32,
        gelu: bool,
    ) -> Result<Tensor> {
        if weight.rank() != 2 || a.rank() != 2 {
            return Err(Error::Shape {
                op: "lora_linear",
                a: weight.shape().to_vec(),
                b: a.shape().to_vec(),
                why: "the weight and the adapter A must be matrices".into(),
            });
        }
        let (out, inputs) = (weight.shape()[0], weight.shape()[1]);
        let rank = a.shape()[0];
        if a.shape() != [rank, inputs] || b.shape() != [out, rank] {
            return Err(Error::Shape {
                op: "lora_linear",
                a: a.shape().to_vec(),
                b: b.shape().to_vec(),
                why: format!("the adapters of a [{out}, {inputs}] weight must be [r, {inputs}] and [{out}, r]"),
            });
        }
        let down = match gelu {
            true => self.gelu_linear(a, None)?,
            false => self.linear(a, None)?,
        };
        down.scale(scale)?.linear(b, None)
    }

    /// The same sum as three separate passes (base, adapter, add): the reference the fused
    /// form is measured and checked against.
    pub fn lora_linear_unfused(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        (a, b): (&Tensor, &Tensor),
        scale: f32,
    ) -> Result<Tensor> {
        let low = self.linear(a, None)?.linear(b, None)?.scale(scale)?;
        self.linear(weight, bias)?.add(&low)
    }
}

/// `product(term)`, the term the adapter's `low` (plus `residual`), which the base's product
/// adds as it stores its output. Backward passes the output's gradient to the term whole and
/// never reads its values, so each is freed as soon as it has been read: a full [rows, out]
/// tensor (25 MB for GPT-2's MLP on 8 × 256 tokens) need not live on until backward.
fn added_as_stored(
    low: Tensor,
    residual: Option<&Tensor>,
    product: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let term = match residual {
        Some(residual) => {
            let sum = residual.add(&low)?;
            low.free();
            sum
        }
        None => low,
    };
    let out = product(&term)?;
    term.free();
    Ok(out)
}
