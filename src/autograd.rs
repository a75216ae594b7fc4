//! Reverse-mode autograd: ops record themselves as they run; `backward` sorts the graph
//! topologically and applies one rule per op, summing gradients of tensors used more than once.

use crate::error::{Error, Result};
use crate::tensor::{DType, Tensor};
use std::cell::Cell;
use std::rc::Rc;
// Fx, not SipHash: the keys are tensor ids, looked up several times per op in every step.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether ops record themselves for backward right now.
pub fn is_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Runs `f` without recording any op (evaluation, optimizer updates, backward itself).
pub fn no_grad<T>(f: impl FnOnce() -> T) -> T {
    recording(false, f)
}

/// Runs `f` recording ops, even within backward (which records none): a recomputed part of a
/// model (`recompute.rs`) is recorded again to be differentiated.
pub(crate) fn with_grad<T>(f: impl FnOnce() -> T) -> T {
    recording(true, f)
}

fn recording<T>(on: bool, f: impl FnOnce() -> T) -> T {
    let before = GRAD_ENABLED.with(|g| g.replace(on));
    let out = f();
    GRAD_ENABLED.with(|g| g.set(before));
    out
}

/// An op's inputs, inline: asked for several times per op in every step.
pub(crate) type Inputs<'a> = smallvec::SmallVec<[&'a Tensor; 4]>;

/// How a tensor was made: the inputs it read and its backward rule. Each op family declares
/// its rule beside its forward, in its own module under `ops/`, so adding a family touches
/// only that module and the op list in `ops/mod.rs`.
pub(crate) trait Backward {
    /// The inputs, in the order `backward` returns their gradients.
    fn inputs(&self) -> Inputs<'_>;

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

    /// `backward` for the gradient 1 that backward starts from at this op's output (the loss),
    /// for a rule whose kernel takes that 1 as a constant: no pass fills a tensor with it.
    /// None where it cannot.
    fn backward_from_one(&self, _out: &Tensor) -> Result<Option<Vec<Tensor>>> {
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

    /// Whether this rule takes its output's gradient in f16 as it is (a linear layer whose
    /// input-gradient product runs on the f16 kernels reads it so, the fused attention over f16
    /// q, k and v, and a reshape passes it on to one): a product that makes that gradient may
    /// then store it in f16 (`takes_f16_gradient`). Any other rule is given it widened to f32.
    fn reads_f16_gradient(&self) -> bool {
        false
    }
}

/// Whether `t` was made by an op whose rule takes its gradient in f16
/// (`Backward::reads_f16_gradient`).
pub(crate) fn takes_f16_gradient(t: &Tensor) -> bool {
    t.op().is_some_and(|op| op.reads_f16_gradient())
}

/// Whether `t` was made by an op that stored it through ReLU (`Backward::stores_through_relu`).
pub(crate) fn made_through_relu(t: &Tensor) -> bool {
    t.op().is_some_and(|op| op.stores_through_relu())
}

/// A recorded op, kept by the tensor it made.
pub(crate) type Op = Rc<dyn Backward>;

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
fn one_gradient_per_input<'a>(
    inputs: Inputs<'a>,
    grads: Vec<Tensor>,
) -> Result<impl Iterator<Item = (&'a Tensor, Tensor)>> {
    if inputs.len() != grads.len() {
        return Err(Error::Backward(format!(
            "an op's backward rule gave {} gradients for its {} inputs",
            grads.len(),
            inputs.len()
        )));
    }
    Ok(inputs.into_iter().zip(grads))
}

/// Room made at once for a backward pass's nodes and gradients: an MLP's step has a few
/// dozen, and growing the maps one rehash at a time cost the page's step 1-2 % of its CPU.
const GRAPH_NODES: usize = 64;

/// The nodes that need a gradient, each after everything it depends on. Iterative, so deep
/// graphs do not overflow the stack.
fn topological_order(root: &Tensor) -> Vec<Tensor> {
    let mut order = Vec::with_capacity(GRAPH_NODES);
    let mut seen = HashSet::with_capacity_and_hasher(GRAPH_NODES, Default::default());
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
    /// The gradient backward starts from: ones in this (scalar's) shape.
    fn one(&self) -> Result<Tensor> {
        Tensor::full(self.shape(), 1.0, self.device())
    }

    /// Backpropagates from this scalar; returns the gradients of every leaf that needs one.
    pub fn backward(&self) -> Result<Gradients> {
        if self.numel() != 1 {
            return Err(Error::Backward(format!(
                "needs a scalar, got shape {:?}",
                self.shape()
            )));
        }
        self.backward_seeded(None)
    }

    /// Backpropagates `g`, the gradient of something with respect to this tensor (of its
    /// shape); returns the gradients of every leaf that needs one.
    pub(crate) fn backward_from(&self, g: &Tensor) -> Result<Gradients> {
        if g.shape() != self.shape() {
            return Err(Error::Backward(format!(
                "a gradient of shape {:?} for a tensor of shape {:?}",
                g.shape(),
                self.shape()
            )));
        }
        self.backward_seeded(Some(g))
    }

    /// Backward from this tensor, its gradient `seed` or, for a scalar, 1.
    fn backward_seeded(&self, seed: Option<&Tensor>) -> Result<Gradients> {
        if !self.requires_grad() {
            return Err(Error::Backward(
                "the tensor does not depend on anything that needs a gradient".into(),
            ));
        }
        no_grad(|| {
            let mut gathered = Gathered {
                grads: HashMap::with_capacity_and_hasher(GRAPH_NODES, Default::default()),
                through_relu: HashSet::default(),
            };
            if let Some(g) = seed {
                gathered.grads.insert(self.id(), g.clone());
            }
            // Each node is dropped once passed, and its op released: a tensor's memory goes
            // back to the pool as soon as the last op that saved it has passed its gradient on.
            for node in topological_order(self).into_iter().rev() {
                if node.op_released() {
                    return Err(Error::Backward(
                        "backward already ran through this graph, whose ops then let go of what they saved: run the forward pass again".into(),
                    ));
                }
                let Some(op) = node.op() else {
                    if node.id() == self.id() && seed.is_none() {
                        gathered.grads.insert(self.id(), self.one()?);
                    }
                    continue;
                };
                let inputs = op.inputs();
                let first = inputs.first().map(|x| x.id());
                let rule = match node.id() == self.id() && seed.is_none() {
                    true => from_one(&node, op.as_ref())?,
                    false => match gathered.apply((&node, op.as_ref()), first)? {
                        Some(rule) => rule,
                        None => continue,
                    },
                };
                gathered.pass_on(inputs, rule)?;
                node.release_op();
            }
            // The leaves' gradients in f32, as optimizers and callers take them.
            let grads = gathered
                .grads
                .into_iter()
                .map(|(id, g)| Ok((id, g.to_f32()?)));
            Ok(Gradients(grads.collect::<Result<_>>()?))
        })
    }
}

/// What one op's rule gave: its inputs' gradients; whether the first holds the sum of that
/// input's earlier gradients too (`Backward::backward_adding`); whether the first came
/// through ReLU (`Backward::first_gradient_through_relu`).
struct RuleGradients {
    grads: Vec<Tensor>,
    first_holds_its_sum: bool,
    first_through_relu: bool,
}

/// The rule of the loss's op, for the gradient 1 (`Backward::backward_from_one`, else a
/// tensor of ones).
fn from_one(loss: &Tensor, op: &dyn Backward) -> Result<RuleGradients> {
    let grads = match op.backward_from_one(loss)? {
        Some(grads) => grads,
        None => op.backward(loss, &loss.one()?)?,
    };
    Ok(RuleGradients {
        grads,
        first_holds_its_sum: false,
        first_through_relu: op.first_gradient_through_relu(false),
    })
}

/// The gradients gathered so far in one backward pass, by tensor.
struct Gathered {
    grads: HashMap<u64, Tensor>,
    /// The tensors whose every gradient so far came through the ReLU that made them.
    through_relu: HashSet<u64>,
}

impl Gathered {
    /// The rule of `node`'s op applied to the gradient `node` gathered, which is then
    /// forgotten (an intermediate's gradient is not needed once passed on); None when no
    /// gradient reached `node`. `first` is the id of the op's first input.
    fn apply(
        &mut self,
        (node, op): (&Tensor, &dyn Backward),
        first: Option<u64>,
    ) -> Result<Option<RuleGradients>> {
        let Some(g) = self.grads.remove(&node.id()) else {
            return Ok(None);
        };
        let g = match op.reads_f16_gradient() {
            true => g,
            false => g.to_f32()?,
        };
        let g_through_relu = self.through_relu.remove(&node.id());
        // A rule adds what its first input gathered as f32: an f16 one is added apart.
        let so_far = first.and_then(|x| self.grads.get(&x));
        let adding = match so_far.filter(|t| t.dtype() != DType::F16) {
            Some(so_far) => op.backward_adding(node, &g, so_far)?,
            None => None,
        };
        let first_holds_its_sum = adding.is_some();
        let grads = match adding {
            Some(grads) => grads,
            None if g_through_relu => op.backward_through_relu(node, &g)?,
            None => op.backward(node, &g)?,
        };
        Ok(Some(RuleGradients {
            grads,
            first_holds_its_sum,
            first_through_relu: op.first_gradient_through_relu(g_through_relu),
        }))
    }

    /// Adds each input's gradient from `rule` to what that input gathered.
    fn pass_on(&mut self, inputs: Inputs, rule: RuleGradients) -> Result<()> {
        for (i, (input, grad)) in one_gradient_per_input(inputs, rule.grads)?.enumerate() {
            if !input.requires_grad() {
                continue;
            }
            let masked = i == 0 && rule.first_through_relu;
            let sum = match self.grads.remove(&input.id()) {
                Some(prev) => {
                    if !masked {
                        self.through_relu.remove(&input.id());
                    }
                    match i == 0 && rule.first_holds_its_sum {
                        true => grad,
                        false => prev.to_f32()?.add(&grad.to_f32()?)?,
                    }
                }
                None => {
                    if masked {
                        self.through_relu.insert(input.id());
                    }
                    grad
                }
            };
            self.grads.insert(input.id(), sum);
        }
        Ok(())
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
        let err = one_gradient_per_input(smallvec::smallvec![&a, &b], vec![t(0.5)])
            .err()
            .expect("one gradient for two inputs must be refused");
        assert!(
            err.to_string()
                .contains("gave 1 gradients for its 2 inputs"),
            "{err}"
        );
        let pairs: Vec<_> = one_gradient_per_input(smallvec::smallvec![&a], vec![t(0.5)])
            .unwrap()
            .collect();
        assert_eq!(pairs.len(), 1);
    }
}
