//! Activations recomputed rather than kept (gradient checkpointing): a part of a model run
//! without recording keeps nothing of what it made on the way; when backward reaches its
//! output, the part runs again, recorded, from its input, and is differentiated then. A GPT's
//! blocks so keep only their inputs until backward: GPT-2 fine-tuned on 8 × 256 tokens keeps
//! about 1.5 GB of activations otherwise.

use crate::autograd::{with_grad, Backward, Inputs};
use crate::error::Result;
use crate::tensor::Tensor;
use std::rc::Rc;

/// A part of a model: its output from its input, reading the parameters it is given with.
pub(crate) type Part = Rc<dyn Fn(&Tensor) -> Result<Tensor>>;

/// `out`, which `part` made from `x` without recording, recorded as one op whose backward runs
/// `part` again. `params` must hold every tensor needing a gradient that `part` reads besides
/// `x` (their gradients come from the part's own backward); `part` must give the same output
/// when run again (dropout from the same seeds).
pub(crate) fn recorded(out: &Tensor, x: &Tensor, params: Vec<Tensor>, part: Part) -> Tensor {
    let params = params.into_iter().filter(|p| p.requires_grad()).collect();
    let op = Recomputed {
        x: x.clone(),
        params,
        part,
    };
    Tensor::adopt(out, op)
}

struct Recomputed {
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
        let x = match self.x.requires_grad() {
            true => self.x.detach().with_grad(),
            false => self.x.detach(),
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
