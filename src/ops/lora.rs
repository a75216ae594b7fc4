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
        let low = self.low_rank(weight, adapter, scale)?;
        self.linear_residual(weight, bias, &low)
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
        let low = self.low_rank(weight, adapter, scale)?;
        self.linear_residual(weight, bias, &residual.add(&low)?)
    }

    /// The adapter's term `scale · (self · aᵀ) · bᵀ`, its shapes checked against `weight`.
    fn low_rank(&self, weight: &Tensor, (a, b): (&Tensor, &Tensor), scale: f32) -> Result<Tensor> {
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
        self.linear(a, None)?.scale(scale)?.linear(b, None)
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
