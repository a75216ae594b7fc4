//! Activations recomputed rather than kept (gradient checkpointing): a part of a model run
//! without recording keeps nothing of what it made on the way; when backward reaches its
//! output, the part runs again, recorded, from its input, and is differentiated then. A GPT's
//! blocks so keep only their inputs until backward: GPT-2 fine-tuned on 8 × 256 tokens keeps
//! about 1.5 GB of activations otherwise. Under mixed precision those inputs are kept in f16
//! (`KeptInputs`), as PyTorch's autocast keeps what its half-precision products saved.

use crate::autograd::{with_grad, Backward, Inputs};
use crate::error::Result;
use crate::tensor::Tensor;
use std::rc::Rc;

/// A part of a model: its output from its input, reading the parameters it is given with.
pub(crate) type Part = Rc<dyn Fn(&Tensor) -> Result<Tensor>>;

/// How a recomputed part's output is kept for the part after it to run again from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeptInputs {
    /// As computed, in f32.
    Whole,
    /// Rounded to f16, in half the memory (GPT-2's twelve block inputs: 38 MB instead of 75
    /// at 8 × 256 tokens). The part after it runs from the rounded values in backward, so its
    /// gradients are those at inputs off by f16's rounding (about 1e-3 relative at most: a GPU
    /// may round to either neighbouring half), values past f16's range held at ±65,504.
    Half,
}

impl KeptInputs {
    /// Half where `device`'s products run in f16 (mixed precision), else whole.
    pub fn for_device(device: &crate::Device) -> KeptInputs {
        match device {
            crate::Device::Gpu(g) if g.products_f16() => KeptInputs::Half,
            _ => KeptInputs::Whole,
        }
    }

    /// `t` as kept: itself, or rounded to f16 (outside the graph).
    fn keep(self, t: &Tensor) -> Result<Tensor> {
        match self {
            KeptInputs::Whole => Ok(t.clone()),
            KeptInputs::Half => crate::no_grad(|| t.to_f16()),
        }
    }
}

/// A recomputed part's output: its `value` for the next part to run on now, and the `node`
/// that stands for it in the graph, whose data (the value, kept as asked) backward runs the
/// next part again from. They share their data where the value is kept whole.
pub(crate) struct Recorded {
    pub value: Tensor,
    pub node: Tensor,
}

impl Recorded {
    /// An input that no recomputed part made: `x` for the first part to run on and keep.
    /// Kept half only where it needs no gradient (a node that does must be `x` itself).
    pub fn input(x: &Tensor, kept: KeptInputs) -> Result<Recorded> {
        let node = match x.requires_grad() {
            true => x.clone(),
            false => kept.keep(x)?,
        };
        Ok(Recorded {
            value: x.clone(),
            node,
        })
    }
}

/// `out`, which `part` made from `x.value` without recording, recorded as one op whose
/// backward runs `part` again from `x.node`'s data; `out` kept as `kept` asks. `params` must
/// hold every tensor needing a gradient that `part` reads besides its input (their gradients
/// come from the part's own backward); `part` must give the same output when run again
/// (dropout from the same seeds).
pub(crate) fn recorded(
    out: Tensor,
    x: &Recorded,
    params: Vec<Tensor>,
    part: Part,
    kept: KeptInputs,
) -> Result<Recorded> {
    let params = params.into_iter().filter(|p| p.requires_grad()).collect();
    let op = Recomputed {
        x: x.node.clone(),
        params,
        part,
    };
    let data = kept.keep(&out)?;
    Ok(Recorded {
        value: out,
        node: Tensor::adopt(&data, op),
    })
}

struct Recomputed {
    /// The part's input: its data in f32 or f16 (`KeptInputs`), and its place in the graph.
    x: Tensor,
    params: Vec<Tensor>,
    part: Part,
}

impl Backward for Recomputed {
    /// The input where it needs a gradient, then the parameters.
    fn inputs(&self) -> Inputs<'_> {
        let x = self.x.requires_grad().then_some(&self.x);
        x.into_iter().chain(&self.params).collect()
    }

    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let x = self.x.to_f32()?.detach();
        let x = match self.x.requires_grad() {
            true => x.with_grad(),
            false => x,
        };
        let out = with_grad(|| (self.part)(&x))?;
        let mut grads = out.backward_from(g)?;
        // In `inputs`' order, the input's copy standing in for it.
        let leaves = std::iter::once(&x)
            .filter(|x| x.requires_grad())
            .chain(&self.params);
        leaves
            .map(|leaf| match grads.take(leaf) {
                Some(grad) => Ok(grad),
                // The part did not read it after all: its gradient is zero.
                None => Tensor::zeros(leaf.shape(), leaf.device()),
            })
            .collect()
    }
}
