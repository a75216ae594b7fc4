//! Reverse-mode autograd: ops record themselves as they run; `backward` sorts the graph
//! topologically and applies one rule per op, summing gradients of tensors used more than once.

use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether ops record themselves for backward right now.
pub fn is_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Runs `f` without recording any op (evaluation, optimizer updates, backward itself).
pub fn no_grad<T>(f: impl FnOnce() -> T) -> T {
    let before = GRAD_ENABLED.with(|g| g.replace(false));
    let out = f();
    GRAD_ENABLED.with(|g| g.set(before));
    out
}

/// How a tensor was made: the inputs it read and its backward rule. Each op family declares
/// its rule beside its forward, in its own module under `ops/`, so adding a family touches
/// only that module and the op list in `ops/mod.rs`.
pub(crate) trait Backward {
    /// The inputs, in the order `backward` returns their gradients.
    fn inputs(&self) -> Vec<&Tensor>;

    /// Gradients of the inputs given the output `out` and its gradient `g`: one per input.
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>>;

    /// `backward` with the gradient the first input has gathered so far from its other uses
    /// (a residual connection's), for a rule whose kernel adds it as it stores its own: the
    /// sum in the same pass instead of a dispatch of its own. None where it cannot.
    fn backward_adding(
        &self,
        _out: &Tensor,
        _g: &Tensor,
        _so_far: &Tensor,
    ) -> Result<Option<Vec<Tensor>>> {
        Ok(None)
    }

    /// Whether this op's output went through ReLU as it was stored (`Tensor::linear_relu`,
    /// `relu`): its rule starts by zeroing its gradient where the output is 0.
    fn stores_through_relu(&self) -> bool {
        false
    }

    /// Whether the gradient this rule gives its first input is already zero where that input
    /// is 0, the input's op storing through ReLU: a product's store or a max pool's pass did
    /// it on the way, or a reshape passed on a `g` that was (`g_through_relu`). The input's
    /// rule then skips a pass of its own (`backward_through_relu`).
    fn first_gradient_through_relu(&self, _g_through_relu: bool) -> bool {
        false
    }

    /// `backward` for a `g` that is already zero where the output is 0 (every gradient the
    /// output gathered came through its ReLU): an op that stores through ReLU skips it.
    fn backward_through_relu(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        self.backward(out, g)
    }
}

/// Whether `t` was made by an op that stored it through ReLU (`Backward::stores_through_relu`).
pub(crate) fn made_through_relu(t: &Tensor) -> bool {
    t.op().is_some_and(|op| op.stores_through_relu())
}

/// A recorded op, kept by the tensor it made.
pub(crate) type Op = Box<dyn Backward>;

/// Gradients from one backward pass, by tensor.
#[derive(Default)]
pub struct Gradients(HashMap<u64, Tensor>);

impl Gradients {
    /// The gradient of `t`, if it took part in the loss and needs one.
    pub fn get(&self, t: &Tensor) -> Option<&Tensor> {
        self.0.get(&t.id())
    }

    /// Sets the gradient of `t` (e.g. to feed an optimizer gradients computed elsewhere).
    pub fn insert(&mut self, t: &Tensor, grad: Tensor) {
        self.0.insert(t.id(), grad);
    }

    /// Removes and returns the gradient of `t`.
    pub fn take(&mut self, t: &Tensor) -> Option<Tensor> {
        self.0.remove(&t.id())
    }
}

/// Pairs an op's inputs with the gradients its backward rule returned: exactly one each, or an
/// error (a rule that drifted from its op's inputs would otherwise credit the wrong tensor).
fn one_gradient_per_input(
    inputs: Vec<&Tensor>,
    grads: Vec<Tensor>,
) -> Result<impl Iterator<Item = (&Tensor, Tensor)>> {
    if inputs.len() != grads.len() {
        return Err(Error::Backward(format!(
            "an op's backward rule gave {} gradients for its {} inputs",
            grads.len(),
            inputs.len()
        )));
    }
    Ok(inputs.into_iter().zip(grads))
}

/// The nodes that need a gradient, each after everything it depends on. Iterative, so deep
/// graphs do not overflow the stack.
fn topological_order(root: &Tensor) -> Vec<Tensor> {
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(root.clone(), false)];
    while let Some((t, children_done)) = stack.pop() {
        if children_done {
            order.push(t);
            continue;
        }
        if !t.requires_grad() || !seen.insert(t.id()) {
            continue;
        }
        stack.push((t.clone(), true));
        if let Some(op) = t.op() {
            // The first input's subtree is ordered first, so backward reaches it last: a
            // residual connection (a later input) has passed its gradient on by the time the
            // main path's first op reaches the same tensor, which can then add it as it
            // stores its own (`Backward::backward_adding`).
            for input in op.inputs().into_iter().rev() {
                stack.push((input.clone(), false));
            }
        }
    }
    order
}

impl Tensor {
    /// Backpropagates from this scalar; returns the gradients of every leaf that needs one.
    pub fn backward(&self) -> Result<Gradients> {
        if self.numel() != 1 {
            return Err(Error::Backward(format!(
                "needs a scalar, got shape {:?}",
                self.shape()
            )));
        }
        if !self.requires_grad() {
            return Err(Error::Backward(
                "the tensor does not depend on anything that needs a gradient".into(),
            ));
        }
        no_grad(|| {
            let mut grads: HashMap<u64, Tensor> = HashMap::new();
            // The tensors whose every gradient so far came through the ReLU that made them.
            let mut through_relu: HashSet<u64> = HashSet::new();
            grads.insert(self.id(), Tensor::full(self.shape(), 1.0, self.device())?);
            for node in topological_order(self).into_iter().rev() {
                let Some(op) = node.op() else { continue };
                // An intermediate's gradient is not needed once passed on.
                let Some(g) = grads.remove(&node.id()) else {
                    continue;
                };
                let g_through_relu = through_relu.remove(&node.id());
                let inputs = op.inputs();
                let so_far = inputs.first().and_then(|x| grads.get(&x.id())).cloned();
                let adding = match so_far {
                    Some(so_far) => op.backward_adding(&node, &g, &so_far)?,
                    None => None,
                };
                let first_holds_its_sum = adding.is_some();
                let rule_grads = match adding {
                    Some(rule_grads) => rule_grads,
                    None if g_through_relu => op.backward_through_relu(&node, &g)?,
                    None => op.backward(&node, &g)?,
                };
                let first_through_relu = op.first_gradient_through_relu(g_through_relu);
                let pairs = one_gradient_per_input(inputs, rule_grads)?;
                for (i, (input, grad)) in pairs.enumerate() {
                    if !input.requires_grad() {
                        continue;
                    }
                    let masked = i == 0 && first_through_relu;
                    let sum = match grads.remove(&input.id()) {
                        Some(prev) => {
                            if !masked {
                                through_relu.remove(&input.id());
                            }
                            match i == 0 && first_holds_its_sum {
                                true => grad,
                                false => prev.add(&grad)?,
                            }
                        }
                        None => {
                            if masked {
                                through_relu.insert(input.id());
                            }
                            grad
                        }
                    };
                    grads.insert(input.id(), sum);
                }
            }
            Ok(Gradients(grads))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Device;

    #[test]
    fn a_backward_rule_with_the_wrong_number_of_gradients_is_refused() {
        let t = |v: f32| Tensor::from_vec(vec![v], &[1], &Device::Cpu).unwrap();
        let (a, b) = (t(1.0), t(2.0));
        let err = one_gradient_per_input(vec![&a, &b], vec![t(0.5)])
            .err()
            .expect("one gradient for two inputs must be refused");
        assert!(
            err.to_string()
                .contains("gave 1 gradients for its 2 inputs"),
            "{err}"
        );
        let pairs: Vec<_> = one_gradient_per_input(vec![&a], vec![t(0.5)])
            .unwrap()
            .collect();
        assert_eq!(pairs.len(), 1);
    }
}
