//! Linear layers as products: self · weightᵀ with a bias, and what the product's store adds
//! to it (a residual after a dropout, ReLU) or its backward passes through (a GELU before it).

use super::dropout::DropoutMask;
use super::matmul::product_of;
use super::matmul::Epilogue;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

impl Tensor {
    /// A linear layer: self · weightᵀ + bias over the last dimension of self ([.., K] with
    /// weight [N, K] and bias [N]), the bias added as the product is stored.
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        linear_of(self, (weight, bias), (None, None), (None, false))
    }

    /// `self.linear(weight, bias)` stored in f16 where the product runs on the f16 kernels and
    /// can store it so (src/ops/matmul/run.rs, `c_store`), else in f32: for a reader that takes
    /// either as it lies (the fused attention on the matrix units, `attention_reads_f16`).
    pub fn linear_halves(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        self.check_linear(weight)?;
        let epilogue = Epilogue {
            bias,
            f16_store: true,
            ..Epilogue::default()
        };
        self.fold_rows(|flat| product_of(flat, weight, (false, true), epilogue, None))
    }

    /// `self.linear(weight, bias).relu()`, the ReLU applied as the product is stored (and by
    /// the pass that sums a product's chunks of K), with no pass of its own.
    pub fn linear_relu(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        linear_of(self, (weight, bias), (None, None), (None, true))
    }

    /// `self.gelu().linear(weight, bias)`: backward passes the gradient through the GELU as
    /// the product that makes it stores it (shaders/matmul_gelu_grad.wgsl), with no pass of
    /// its own.
    pub fn gelu_linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        gelu_linear_of(self, (weight, bias), (None, None))
    }

    /// `residual + self.linear(weight, bias)`, the residual added as the product is stored
    /// (residual has the output's shape).
    pub fn linear_residual(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        residual: &Tensor,
    ) -> Result<Tensor> {
        linear_of(self, (weight, bias), (Some(residual), None), (None, false))
    }

    /// `residual + self.linear(weight, bias).dropout(p, seed)` in one kernel (a transformer's
    /// residual branch while training): the same elements dropped as by `dropout`, as the
    /// product is stored.
    pub fn linear_residual_dropout(
        &self,
        (weight, bias): (&Tensor, Option<&Tensor>),
        residual: &Tensor,
        p: f32,
        seed: u32,
    ) -> Result<Tensor> {
        let mask = DropoutMask::new(p, seed)?;
        linear_of(
            self,
            (weight, bias),
            (Some(residual), Some(mask)),
            (None, false),
        )
    }

    /// `residual + self.gelu().linear(weight, bias).dropout(p, seed)`, the GELU's backward as
    /// in `gelu_linear` and the dropout as in `linear_residual_dropout`.
    pub fn gelu_linear_residual_dropout(
        &self,
        layer: (&Tensor, Option<&Tensor>),
        residual: &Tensor,
        p: f32,
        seed: u32,
    ) -> Result<Tensor> {
        let mask = DropoutMask::new(p, seed)?;
        gelu_linear_of(self, layer, (Some(residual), Some(mask)))
    }

    /// `residual + self.gelu().linear(weight, bias)`, a transformer's MLP after its first
    /// layer, the GELU's backward as in `gelu_linear`.
    pub fn gelu_linear_residual(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        residual: &Tensor,
    ) -> Result<Tensor> {
        gelu_linear_of(self, (weight, bias), (Some(residual), None))
    }

    fn check_linear(&self, weight: &Tensor) -> Result<()> {
        if self.rank() < 2 || weight.rank() != 2 {
            return Err(Error::Shape {
                op: "linear",
                a: self.shape().to_vec(),
                b: weight.shape().to_vec(),
                why: "the input needs 2 or more dimensions and the weight 2".into(),
            });
        }
        Ok(())
    }
}

/// `pre.gelu().linear(weight, bias)` with what the store adds (as `linear_of`): the GELU made
/// outside the graph, and the product recorded to pass its gradient to `pre` through GELU's
/// derivative as it stores it.
fn gelu_linear_of(
    pre: &Tensor,
    layer: (&Tensor, Option<&Tensor>),
    store: (Option<&Tensor>, Option<DropoutMask>),
) -> Result<Tensor> {
    pre.check_linear(layer.0)?;
    let n = layer.0.shape()[0];
    let dropout = store.1.is_some();
    let h = crate::autograd::no_grad(|| super::matmul::gelu_input(pre, n, dropout))?;
    linear_of(&h, layer, store, (Some(pre), false))
}

/// `input.linear(weight, bias)` (+ residual, added as the product is stored, after the
/// product's dropout if given), recorded with input = gelu(`gelu_of`) where given, through
/// ReLU as it is stored with `relu`.
fn linear_of(
    input: &Tensor,
    (weight, bias): (&Tensor, Option<&Tensor>),
    (residual, dropout): (Option<&Tensor>, Option<DropoutMask>),
    (gelu_of, relu): (Option<&Tensor>, bool),
) -> Result<Tensor> {
    input.check_linear(weight)?;
    let n = weight.shape()[0];
    let mut out_shape = input.shape().to_vec();
    *out_shape.last_mut().expect("rank >= 2") = n;
    let flat_residual = match residual {
        Some(r) if r.shape() != out_shape => {
            return Err(Error::Shape {
                op: "linear",
                a: out_shape,
                b: r.shape().to_vec(),
                why: "a residual must have the output's shape".into(),
            })
        }
        Some(r) => Some(r.reshape(&[r.numel() / n.max(1), n])?),
        None => None,
    };
    let epilogue = Epilogue {
        bias,
        residual: flat_residual.as_ref(),
        dropout,
        relu,
        ..Epilogue::default()
    };
    let k = input.shape()[input.rank() - 1];
    let flat_gelu_of = match gelu_of {
        Some(x) => Some(x.reshape(&[x.numel() / k.max(1), k])?),
        None => None,
    };
    let gelu_of = flat_gelu_of.as_ref();
    input.fold_rows(|flat| product_of(flat, weight, (false, true), epilogue, gelu_of))
}
