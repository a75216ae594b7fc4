//! Batched matrix multiplication with operands optionally transposed in place: the products
//! of tensors and their backward (here), and products into a buffer at given layouts
//! (run.rs). How each runs on a GPU is plan.rs's, from the device's `Tuning`; how K is split,
//! split.rs's; linear layers over products are linear.rs's.
//!
//! The files import one way: layout, epilogue, regs and split know no other file of the
//! product, nor does shared_copies; operand_f16 uses layout and shared_copies; plan uses
//! layout, epilogue, regs and split; run uses plan, operand_f16 and split_sum; bias_grad uses
//! run; this file uses them all.

mod bias_grad;
mod calibrate;
mod choices;
mod epilogue;
mod layout;
mod operand_f16;
mod plan;
mod regs;
mod run;
mod shared_copies;
mod split;
mod split_sum;
#[cfg(all(test, not(target_arch = "wasm32")))]
mod variants;

pub(crate) use calibrate::{LargeTileTimer, ProductTimer};
pub use choices::candidates as product_candidates;
pub(crate) use epilogue::{Causal, Epilogue};
pub(crate) use layout::{Dims, Layout, Views};
pub use plan::Path;
pub(crate) use plan::BIG_TILE_WORKGROUP_BYTES;
pub(crate) use regs::MOST_COLS as FEWEST_COLUMNS_A_GROUP;
pub(crate) use run::matmul_into;

use super::dropout::DropoutMask;
use super::gpu_of;
use crate::autograd::{self, Backward, Inputs};
use crate::error::{Error, Result};
use crate::tensor::{numel, DType, Host, Storage, Tensor};
use bias_grad::weight_and_bias_grads;
use layout::cpu_matmul;
use plan::BIG_TILES_FROM;
use shared_copies::{sharing, Shared};

/// (rows, cols) of op(x) for the last two dimensions.
fn op_dims(x: &Tensor, t: bool) -> (usize, usize) {
    let (r, c) = (x.shape()[x.rank() - 2], x.shape()[x.rank() - 1]);
    if t {
        (c, r)
    } else {
        (r, c)
    }
}

fn batch_shape(x: &Tensor) -> &[usize] {
    &x.shape()[..x.rank() - 2]
}

/// op(a) · op(b) over broadcast batch dimensions.
pub(crate) fn matmul_raw(a: &Tensor, b: &Tensor, ta: bool, tb: bool) -> Result<Tensor> {
    product(a, b, (ta, tb), Epilogue::default())
}

/// a · b with `row_bias` [M] added to every column and then ReLU with `relu`, as C is stored
/// (a convolution's product, src/ops/conv.rs). The row bias is not recorded for backward:
/// the convolution runs this without gradients and records its own op.
pub(crate) fn matmul_row_bias(
    a: &Tensor,
    b: &Tensor,
    row_bias: Option<&Tensor>,
    relu: bool,
) -> Result<Tensor> {
    let epilogue = Epilogue {
        row_bias,
        relu,
        ..Epilogue::default()
    };
    product(a, b, (false, false), epilogue)
}

/// (m, k, n) of op(a) · op(b), checked: both at least matrices, inner sizes equal.
fn checked_dims(a: &Tensor, b: &Tensor, (ta, tb): (bool, bool)) -> Result<(usize, usize, usize)> {
    let name = "matmul";
    // A frozen weight may be held in f16, and the input after a GELU in an f16 run
    // (`gelu_input`).
    a.expect_float(name)?;
    b.expect_float(name)?;
    a.same_device(name, b)?;
    let shape_error = |why: String| Error::Shape {
        op: name,
        a: a.shape().to_vec(),
        b: b.shape().to_vec(),
        why,
    };
    if a.rank() < 2 || b.rank() < 2 {
        return Err(shape_error("both need 2 or more dimensions".into()));
    }
    let (m, k) = op_dims(a, ta);
    let (k2, n) = op_dims(b, tb);
    if k != k2 {
        return Err(shape_error(format!("inner sizes {k} and {k2} differ")));
    }
    Ok((m, k, n))
}

/// op(a) · op(b) over broadcast batch dimensions, plus the epilogue's bias and residual, added
/// as C is stored.
fn product(a: &Tensor, b: &Tensor, t: (bool, bool), epilogue: Epilogue) -> Result<Tensor> {
    product_of(a, b, t, epilogue, None)
}

/// `product`, recorded for backward with a = gelu(`gelu_of`) where given: backward then passes
/// a's gradient through the GELU as it stores it, straight to gelu_of.
pub(super) fn product_of(
    a: &Tensor,
    b: &Tensor,
    (ta, tb): (bool, bool),
    epilogue: Epilogue,
    gelu_of: Option<&Tensor>,
) -> Result<Tensor> {
    let name = "matmul";
    let (m, k, n) = checked_dims(a, b, (ta, tb))?;
    let batch = super::broadcast_shapes(name, batch_shape(a), batch_shape(b))?;
    let d = Dims {
        m,
        n,
        k,
        batches: numel(&batch),
    };
    let mut shape = batch.clone();
    shape.extend([m, n]);
    epilogue.check(a, &shape)?;
    // A batch of one broadcasts for free (stride 0); other broadcasts are materialised.
    let operand = |x: &Tensor| -> Result<(Tensor, usize)> {
        let size = numel(&x.shape()[x.rank() - 2..]);
        if numel(batch_shape(x)) == 1 {
            return Ok((x.clone(), 0));
        }
        let mut full = batch.clone();
        full.extend_from_slice(&x.shape()[x.rank() - 2..]);
        Ok((x.expand(&full)?, size))
    };
    let operands = [operand(a)?, operand(b)?];
    let mut f16_copies = Vec::new();
    let (storage, dtype) = match gpu_of(a.device()) {
        None => {
            let [(a_full, sa), (b_full, sb)] = &operands;
            let (av, bv) = (a_full.host_f64(name)?, b_full.host_f64(name)?);
            let mut c = vec![0.0; d.batches * m * n];
            let views = Views::dense(d, (ta, tb), (*sa, *sb));
            cpu_matmul([&av, &bv], &mut c, d, (ta, tb), views);
            epilogue.add_cpu(&mut c, n)?;
            (Storage::Host(Host::F(c)), DType::F32)
        }
        Some(gpu) => {
            let forced = (epilogue, None);
            let (storage, copies) = sharing(&[], || {
                run::gpu_product(gpu, &operands, d, (ta, tb), forced)
            });
            f16_copies = copies;
            storage?
        }
    };
    let op = MatMulOp {
        a: a.clone(),
        b: b.clone(),
        ta,
        tb,
        bias: epilogue.bias.cloned(),
        residual: epilogue.residual.cloned(),
        gelu_of: gelu_of.cloned(),
        dropout: epilogue.dropout,
        relu: epilogue.relu,
        f16_copies,
    };
    Ok(Tensor::from_op(shape, dtype, a.device(), storage, op))
}

/// Whether the product of a linear layer into `n` columns over `x` ([.., K] in f32, with a
/// dropout in its store or not) runs on the f16 kernels, as `planned` (run.rs) will plan it:
/// rows of a multiple of 8, the product large enough, and its timing, once made, chose them.
/// An op that makes a layer's input then makes it in f16 (`gelu_input`, a LayerNorm's
/// `layernorm_into_linear`): read by the product as it lies, and held so for its weight's
/// gradient, where an f32 output would be copied to f16 and both held. A product whose timing
/// later chose an f32 kernel widens it (run.rs).
pub(crate) fn linear_reads_f16(x: &Tensor, n: usize, dropout: bool) -> Result<bool> {
    let k = x.shape()[x.rank() - 1];
    let d = Dims {
        m: x.numel() / k.max(1),
        n,
        k,
        batches: 1,
    };
    // x · Wᵀ, a dropout in its store keeping K whole.
    let gpu = gpu_of(x.device()).filter(|_| x.dtype() == DType::F32);
    match gpu.filter(|_| k.is_multiple_of(operand_f16::ROW_HALVES)) {
        Some(gpu) => run::runs_in_f16(gpu, d, true, !dropout),
        None => Ok(false),
    }
}

/// gelu(`pre`) as the input of a linear layer's product into `n` columns: in f16 where the
/// product reads it so (`linear_reads_f16`), made by the f16 copy's kernel with the GELU
/// applied (operand_f16::gelu_f16): one pass where GELU's f32 output and then its copy took
/// two. On an H200 nanochar's f16 run held 0.6 GB less and its page step took 0.3 ms less
/// (docs/log/products.md, "The GELU's output in f16"). Else in f32.
pub(crate) fn gelu_input(pre: &Tensor, n: usize, dropout: bool) -> Result<Tensor> {
    match (gpu_of(pre.device()), linear_reads_f16(pre, n, dropout)?) {
        (Some(gpu), true) => operand_f16::gelu_f16(gpu, pre),
        _ => pre.gelu(),
    }
}

/// op(a)ᵀ · b when the shared dimension K is long and the output small (weight gradients,
/// where K is the batch's rows): K is cut into chunks multiplied as one batch and then summed,
/// so that many workgroups share the work instead of a few looping over all of K. Both stored
/// operands have K first, so the chunks are plain reshapes.
fn matmul_split_k(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.rank() == 2 && b.rank() == 2 && a.shape()[0] == b.shape()[0] {
        let (k, m, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
        if k >= 4096 && m.div_ceil(128) * n.div_ceil(128) < BIG_TILES_FROM {
            if let Some(s) = split::long_k_chunks(k) {
                let parts = matmul_raw(
                    &a.reshape(&[s, k / s, m])?,
                    &b.reshape(&[s, k / s, n])?,
                    true,
                    false,
                )?;
                return parts.sum(0, false);
            }
        }
    }
    matmul_raw(a, b, true, false)
}

/// op(a) · op(b) (+ bias) (+ residual), as recorded for backward.
struct MatMulOp {
    a: Tensor,
    b: Tensor,
    ta: bool,
    tb: bool,
    /// Added to every row as the product is stored (Tensor::linear).
    bias: Option<Tensor>,
    /// Added element by element as the product is stored (Tensor::linear_residual).
    residual: Option<Tensor>,
    /// What a is the GELU of, outside the graph (Tensor::gelu_linear_residual): the input
    /// whose gradient backward gives in a's place.
    gelu_of: Option<Tensor>,
    /// The dropout of the product before the residual (Tensor::linear_residual_dropout).
    dropout: Option<DropoutMask>,
    /// Whether the output went through ReLU as it was stored (Tensor::linear_relu).
    relu: bool,
    /// The f16 copies of a and b the matrix units read (operand_f16.rs), which serve the
    /// gradients' products where they read the same operands.
    f16_copies: Vec<Shared>,
}

impl MatMulOp {
    /// a, where a came out of a ReLU and a's gradient is one product of a's shape (a not
    /// transposed, not broadcast, no GELU before it): that product's store then passes the
    /// gradient through the ReLU, and the ReLU's op skips its own pass.
    fn relu_of_a(&self) -> Option<&Tensor> {
        let (a_batch, b_batch) = (batch_shape(&self.a), batch_shape(&self.b));
        let whole = super::broadcast_shapes("matmul", a_batch, b_batch).is_ok_and(|s| s == a_batch);
        let plain = !self.ta && self.gelu_of.is_none() && whole;
        (plain && self.a.requires_grad() && autograd::made_through_relu(&self.a)).then_some(&self.a)
    }
}

impl Backward for MatMulOp {
    /// Only the inputs that need a gradient: a frozen weight (LoRA's base, a layer not being
    /// fine-tuned) or the data fed to the first layer costs no product in backward.
    fn inputs(&self) -> Inputs<'_> {
        [self.gelu_of.as_ref().unwrap_or(&self.a), &self.b]
            .into_iter()
            .chain(&self.bias)
            .chain(&self.residual)
            .filter(|t| t.requires_grad())
            .collect()
    }
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let g = &super::unary::grad_through_relu(self.relu, out, g)?;
        self.backward_through_relu(out, g)
    }
    fn stores_through_relu(&self) -> bool {
        self.relu
    }
    fn first_gradient_through_relu(&self, _g_through_relu: bool) -> bool {
        self.relu_of_a().is_some()
    }
    fn backward_through_relu(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        // g's f16 copy, made for the first gradient, serves the second.
        sharing(&self.f16_copies, || self.gradients(out, g)).0
    }
    /// A product's g is read by its gradients' products, which take f16 as it is on the f16
    /// kernels and widen it on the others, and by the bias's sums, widened where they are not
    /// the weight gradient's row sums: taken in f16 where the input's gradient product runs on
    /// the f16 kernels. Not where g goes on as it is (a residual's gradient), through a
    /// dropout's mask or ReLU's (f32 kernels).
    fn reads_f16_gradient(&self) -> bool {
        let plain = self.residual.is_none() && self.dropout.is_none() && !self.relu;
        plain && self.input_gradient_in_f16()
    }
}

impl MatMulOp {
    /// Whether the product that makes the input's gradient from g (`matmul_backward`: g ·
    /// op(b)ᵀ, a linear layer's [rows, N] · [N, K]) runs on the f16 kernels as planned for its
    /// shape, the timing's choice included: only then does a g made in f16 save its copy
    /// rather than cost a widening. No for other ranks, a transposed a, or an input that
    /// needs no gradient.
    fn input_gradient_in_f16(&self) -> bool {
        let first = self.gelu_of.as_ref().unwrap_or(&self.a);
        let plain = !self.ta && self.a.rank() == 2 && self.b.rank() == 2;
        let Some(gpu) = gpu_of(self.a.device()).filter(|_| plain && first.requires_grad()) else {
            return false;
        };
        let (m, k) = op_dims(&self.a, false);
        let (_, n) = op_dims(&self.b, self.tb);
        let d = Dims {
            m,
            n: k,
            k: n,
            batches: 1,
        };
        // The GELU's derivative in its store keeps K whole.
        let splittable = self.gelu_of.is_none();
        run::runs_in_f16(gpu, d, !self.tb, splittable).unwrap_or(false)
    }

    /// The gradients of `backward_through_relu`.
    fn gradients(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let a = (&self.a, self.gelu_of.as_ref(), self.relu_of_a());
        let Some(mask) = self.dropout else {
            let extras = (self.bias.as_ref(), self.residual.as_ref());
            return matmul_backward(a, &self.b, (self.ta, self.tb), extras, g);
        };
        // The product's gradient is the output's through the same mask; the residual's is
        // the output's.
        let dropped = g.dropout(mask.p, mask.seed)?;
        let extras = (self.bias.as_ref(), None);
        let mut grads = matmul_backward(a, &self.b, (self.ta, self.tb), extras, &dropped)?;
        if self.residual.as_ref().is_some_and(|t| t.requires_grad()) {
            grads.push(g.clone());
        }
        Ok(grads)
    }
}

/// Gradients of op(a) · op(b) (+ bias) (+ residual) with respect to a (or what a is the GELU
/// of), b, the bias and the residual: those present and needing one, in that order.
fn matmul_backward(
    (a, gelu_of, relu_of): (&Tensor, Option<&Tensor>, Option<&Tensor>),
    b: &Tensor,
    (ta, tb): (bool, bool),
    (bias, residual): (Option<&Tensor>, Option<&Tensor>),
    g: &Tensor,
) -> Result<Vec<Tensor>> {
    let mut grads = Vec::with_capacity(4);
    let first = gelu_of.unwrap_or(a);
    if first.requires_grad() {
        // For a rule that reads it in f16 (through a GELU, a layer whose gradient products
        // read it so; the fused attention's dO): stored so where this product runs in f16,
        // as the copy they would otherwise make of it.
        let through_activation = Epilogue {
            gelu_grad: gelu_of,
            relu_grad: relu_of,
            f16_store: autograd::takes_f16_gradient(first),
            ..Epilogue::default()
        };
        let da = match ta {
            true => matmul_raw(b, g, tb, true)?,
            false => product(g, b, (false, !tb), through_activation)?,
        };
        // A broadcast input's gradient is summed, in f32.
        let da = match da.shape() == first.shape() {
            true => da,
            false => da.to_f32()?.sum_to_shape(first.shape())?,
        };
        grads.push(da);
    }
    // A linear layer's weight and bias gradients from one product where the kernels allow.
    let bias = bias.filter(|t| t.requires_grad());
    let fused = match (bias, b.requires_grad(), (ta, tb)) {
        (Some(_), true, (false, true)) => weight_and_bias_grads(g, a)?,
        _ => None,
    };
    if let Some([dw, db]) = fused {
        grads.extend([dw, db]);
    } else {
        if b.requires_grad() {
            let db = match (ta, tb) {
                (false, true) => matmul_split_k(g, a)?,
                (false, false) => matmul_split_k(a, g)?,
                (true, true) => matmul_raw(g, a, true, true)?,
                (true, false) => matmul_raw(a, g, false, false)?,
            };
            grads.push(db.sum_to_shape(b.shape())?);
        }
        if let Some(bias) = bias {
            grads.push(g.to_f32()?.sum_to_shape(bias.shape())?);
        }
    }
    if residual.is_some_and(|t| t.requires_grad()) {
        grads.push(g.clone());
    }
    Ok(grads)
}

impl Tensor {
    /// `f` of self with its leading dimensions folded into rows ([.., K] as [rows, K]), its
    /// [rows, N] result unfolded to [.., N]: one large product instead of a batch.
    pub(super) fn fold_rows(&self, f: impl FnOnce(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
        let k = self.shape()[self.rank() - 1];
        let rows = self.numel() / k.max(1);
        let flat = f(&self.reshape(&[rows, k])?)?;
        let mut shape = self.shape().to_vec();
        *shape.last_mut().expect("rank >= 1") = flat.shape()[1];
        flat.reshape(&shape)
    }

    /// Matrix product over the last two dimensions, batched over the others.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        self.matmul_t(other, false, false)
    }

    /// op(self) · op(other), where op transposes the last two dimensions when its flag is set;
    /// the transposed operand is read in place.
    pub fn matmul_t(&self, other: &Tensor, ta: bool, tb: bool) -> Result<Tensor> {
        // [.., M, K] · [K, N]: fold the batch into M for one large product.
        if self.rank() > 2 && other.rank() == 2 && !ta {
            return self.fold_rows(|flat| matmul_raw(flat, other, false, tb));
        }
        matmul_raw(self, other, ta, tb)
    }
}
