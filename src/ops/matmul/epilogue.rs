//! What a product's kernel adds to it as it stores C (`Epilogue`: a bias, a residual, an
//! activation or its derivative, dropout), the slots that add it, the same on the CPU, and what
//! a causal product may skip (`Causal`).

use crate::error::{Error, Result};
use crate::gpu::Kernel;
use crate::ops::dropout::DropoutMask;
use crate::ops::unary::gelu_grad;
use crate::tensor::{DType, Tensor};

/// What a product of causal attention (src/ops/attention/scores.rs) knows to be zero or not
/// needed, so that the tiled kernels skip tiles or parts of K that give nothing. The emulated
/// GPUs' kernel and the CPU compute everything, which gives the same where it is needed.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Causal {
    /// A dense product.
    #[default]
    No = 0,
    /// Only C[i, j] with j ≤ i is needed (scores, and their gradient).
    OutputLower = 1,
    /// op(A)[i, k] is zero for k > i (probabilities times values or keys).
    ALower = 2,
    /// op(A)[i, k] is zero for k < i (transposed probabilities times queries or dO).
    AUpper = 3,
}

/// What a matmul adds to the product as it stores C.
#[derive(Default, Clone, Copy)]
pub(crate) struct Epilogue<'a> {
    /// [N], added to every row (linear layers).
    pub(crate) bias: Option<&'a Tensor>,
    /// [M], added to every column (a convolution's per-channel bias); not with `bias`.
    pub(crate) row_bias: Option<&'a Tensor>,
    /// C's shape, added element by element (a residual connection).
    pub(crate) residual: Option<&'a Tensor>,
    /// C's shape: C is multiplied by GELU's derivative at it, element by element (a gradient
    /// passed back through the GELU that made the product's input). Not with a residual.
    pub(crate) gelu_grad: Option<&'a Tensor>,
    /// C's shape: C is kept where this ReLU output is positive and 0 elsewhere (a gradient
    /// passed back through the ReLU that made the product's input). Not with a residual.
    pub(crate) relu_grad: Option<&'a Tensor>,
    /// What the product may skip (`Causal`): not an addition, but known as C is planned.
    pub(crate) causal: Causal,
    /// Applied to the product before the residual is added (only with a residual).
    pub(crate) dropout: Option<DropoutMask>,
    /// C through ReLU, after the bias (not with a residual or GELU's derivative: `check`).
    pub(crate) relu: bool,
    /// C may be stored in f16 where the product runs on the f16 kernels, in rows of whole
    /// packets and K not split (run.rs, `c_store`): a gradient for a rule that reads it so
    /// (`autograd::takes_f16_gradient`: products, which would otherwise copy it to f16 first,
    /// or the fused attention's dO), or q, k and v for that attention (`Tensor::linear_halves`).
    pub(crate) f16_store: bool,
}

/// How a product's kernel stores C (its STORE slot, shaders/matmul_store_*.wgsl).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Store {
    /// One f32 value at a time.
    Values,
    /// Four f32 values at a time, for rows of whole vec4s.
    Vec4s,
    /// Four values rounded to f16 at a time (`Epilogue::f16_store`).
    Halves,
}

impl Store {
    /// f32 values, four at a time where C's rows are whole vec4s.
    pub(crate) fn f32(whole_vec4s: bool) -> Store {
        match whole_vec4s {
            true => Store::Vec4s,
            false => Store::Values,
        }
    }

    fn slot(self) -> &'static str {
        match self {
            Store::Values => "matmul_store_f32",
            Store::Vec4s => "matmul_store_vec4",
            Store::Halves => "matmul_store_f16",
        }
    }
}

impl Epilogue<'_> {
    /// The slots every matmul kernel takes (shaders/matmul_out.wgsl): what is bound after A
    /// and B (the bias, then the residual), where C is, and whether C is stored a vec4 at a
    /// and how (`store`). Reading the bias and the residual as vec4s too made no difference on
    /// an H100 (docs/BENCHMARKS.md).
    pub(crate) fn slots(&self, kernel: Kernel, store: Store) -> Kernel {
        let residual = self.residual.is_some();
        let bias = self.bias.is_some() || self.row_bias.is_some();
        let bias_kernel = match (self.bias, self.row_bias) {
            (Some(_), _) => "matmul_bias",
            (None, Some(_)) => "matmul_row_bias",
            (None, None) => "matmul_no_bias",
        };
        // The residual's place: the residual, GELU's input for its derivative, ReLU's output
        // for its, ReLU (nothing bound), or nothing.
        let (tail, tail_kernel) = match self {
            Epilogue {
                residual: Some(_), ..
            } => (true, "matmul_residual"),
            Epilogue {
                gelu_grad: Some(_), ..
            } => (true, "matmul_gelu_grad"),
            Epilogue {
                relu_grad: Some(_), ..
            } => (true, "matmul_mask_relu"),
            Epilogue { relu: true, .. } => (false, "matmul_relu"),
            _ => (false, "matmul_no_residual"),
        };
        let kernel = kernel
            .slot("BIAS", bias_kernel)
            .slot("RESIDUAL", tail_kernel)
            .slot("STORE", store.slot());
        let res = 3 + bias as usize;
        debug_assert!(
            self.combines(),
            "`check` refuses what the kernels do not combine"
        );
        let kernel = match residual {
            true => kernel.constant("DROPOUT", self.dropout.is_some()),
            false => kernel,
        };
        kernel.slot("RES", res).slot("OUT", res + tail as usize)
    }

    /// Whether the kernels combine these additions: one bias at most, by column or by row; one
    /// tail at most (the residual, GELU's or ReLU's derivative, or ReLU); dropout only before a
    /// residual.
    fn combines(&self) -> bool {
        let tails = [
            self.residual.is_some(),
            self.gelu_grad.is_some(),
            self.relu_grad.is_some(),
            self.relu,
        ];
        let one_tail = tails.iter().filter(|&&t| t).count() <= 1;
        let one_bias = self.bias.is_none() || self.row_bias.is_none();
        one_tail && one_bias && (self.dropout.is_none() || self.residual.is_some())
    }

    /// Checks the bias against N columns and the residual against C's shape, and that the
    /// additions are ones the kernels combine: one tail at most (the residual, GELU's
    /// derivative or ReLU), and dropout only before a residual.
    pub(crate) fn check(&self, a: &Tensor, c_shape: &[usize]) -> Result<()> {
        let name = "matmul";
        if !self.combines() {
            return Err(Error::Invalid {
                op: name,
                why: "a product's store takes one bias, by column or by row, and one of a \
                      residual (after a dropout, if any), GELU's or ReLU's derivative, or ReLU"
                    .into(),
            });
        }
        let (m, n) = (c_shape[c_shape.len() - 2], c_shape[c_shape.len() - 1]);
        let tails = [
            (self.residual, c_shape),
            (self.gelu_grad, c_shape),
            (self.relu_grad, c_shape),
        ];
        let biases = [(self.bias, &[n][..]), (self.row_bias, &[m][..])];
        for (t, want) in biases.into_iter().chain(tails) {
            let Some(t) = t else { continue };
            t.expect_dtype(name, DType::F32)?;
            a.same_device(name, t)?;
            if t.shape() != want {
                return Err(Error::Shape {
                    op: name,
                    a: c_shape.to_vec(),
                    b: t.shape().to_vec(),
                    why: format!(
                        "a bias must be [{n}] (or [{m}] by row) and a residual the output's shape"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The same on the CPU, into `c` of `n` columns.
    pub(crate) fn add_cpu(&self, c: &mut [f64], n: usize) -> Result<()> {
        if let Some(bias) = self.bias {
            let bv = bias.host_f64("matmul")?;
            c.iter_mut().enumerate().for_each(|(i, x)| *x += bv[i % n]);
        }
        if let Some(bias) = self.row_bias {
            let bv = bias.host_f64("matmul")?;
            let m = bv.len();
            c.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x += bv[(i / n) % m]);
        }
        if let Some(mask) = self.dropout {
            c.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = mask.apply(i, *x));
        }
        if let Some(residual) = self.residual {
            let rv = residual.host_f64("matmul")?;
            c.iter_mut().zip(rv).for_each(|(x, r)| *x += r);
        }
        if self.relu {
            c.iter_mut().for_each(|x| *x = x.max(0.0));
        }
        if let Some(input) = self.gelu_grad {
            let xv = input.host_f64("matmul")?;
            c.iter_mut().zip(xv).for_each(|(v, x)| *v *= gelu_grad(x));
        }
        if let Some(output) = self.relu_grad {
            let yv = output.host_f64("matmul")?;
            c.iter_mut()
                .zip(yv)
                .for_each(|(v, y)| *v = if y > 0.0 { *v } else { 0.0 });
        }
        Ok(())
    }
}
