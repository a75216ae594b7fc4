//! Reverse-mode autograd: ops record themselves as they run; `backward` sorts the graph
//! topologically and applies one rule per op, summing gradients of tensors used more than once.

use crate::error::{Error, Result};
use crate::ops::{self, Binary, Unary};
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

/// How a tensor was made, with what its backward rule needs.
pub(crate) enum Op {
    Unary(Unary, Tensor),
    Binary(Binary, Tensor, Tensor),
    MatMul {
        a: Tensor,
        b: Tensor,
        ta: bool,
        tb: bool,
        /// Added to every row as the product is stored (Tensor::linear).
        bias: Option<Tensor>,
        /// Added element by element as the product is stored (Tensor::linear_residual).
        residual: Option<Tensor>,
    },
    SumAxis {
        x: Tensor,
    },
    MaxAxis {
        x: Tensor,
        axis: usize,
        argmax: Tensor,
    },
    Reshape(Tensor),
    Permute {
        x: Tensor,
        perm: Vec<usize>,
    },
    Slice {
        x: Tensor,
        axis: usize,
        start: usize,
    },
    Concat {
        xs: Vec<Tensor>,
        axis: usize,
    },
    Expand(Tensor),
    Softmax(Tensor),
    LogSoftmax(Tensor),
    CrossEntropy {
        logits: Tensor,
        targets: Tensor,
    },
    Embedding {
        weight: Tensor,
        indices: Tensor,
    },
    LayerNorm {
        x: Tensor,
        weight: Tensor,
        bias: Tensor,
        stats: Tensor,
    },
    Attention {
        q: Tensor,
        k: Tensor,
        v: Tensor,
        heads: usize,
        lse: Tensor,
    },
    AttentionPacked {
        qkv: Tensor,
        heads: usize,
        lse: Tensor,
    },
    Conv2d {
        x: Tensor,
        weight: Tensor,
        bias: Option<Tensor>,
        stride: usize,
        padding: usize,
    },
    MaxPool2d {
        x: Tensor,
        argmax: Tensor,
        k: usize,
        stride: usize,
    },
    Dropout {
        x: Tensor,
        p: f32,
        seed: u32,
    },
}

impl Op {
    /// The inputs, in the order `backward` returns their gradients.
    pub fn inputs(&self) -> Vec<&Tensor> {
        use Op::*;
        match self {
            Unary(_, x) | SumAxis { x } | MaxAxis { x, .. } | Reshape(x) | Permute { x, .. } => {
                vec![x]
            }
            Slice { x, .. } | Expand(x) | Softmax(x) | LogSoftmax(x) | MaxPool2d { x, .. } => {
                vec![x]
            }
            Dropout { x, .. } | CrossEntropy { logits: x, .. } | Embedding { weight: x, .. } => {
                vec![x]
            }
            Binary(_, a, b) => vec![a, b],
            MatMul {
                a,
                b,
                bias,
                residual,
                ..
            } => [a, b].into_iter().chain(bias).chain(residual).collect(),
            Concat { xs, .. } => xs.iter().collect(),
            LayerNorm {
                x, weight, bias, ..
            } => vec![x, weight, bias],
            Attention { q, k, v, .. } => vec![q, k, v],
            AttentionPacked { qkv, .. } => vec![qkv],
            Conv2d {
                x, weight, bias, ..
            } => {
                let mut v = vec![x, weight];
                v.extend(bias.iter());
                v
            }
        }
    }

    /// Gradients of the inputs given the output `out` and its gradient `g`.
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        use Op::*;
        match self {
            Unary(kind, x) => Ok(vec![ops::unary_backward(*kind, x, out, g)?]),
            Binary(kind, a, b) => ops::binary_backward(*kind, a, b, out, g),
            MatMul {
                a,
                b,
                ta,
                tb,
                bias,
                residual,
            } => ops::matmul_backward(a, b, (*ta, *tb), (bias.as_ref(), residual.as_ref()), g),
            SumAxis { x } => Ok(vec![g.expand(x.shape())?]),
            MaxAxis { x, axis, argmax } => Ok(vec![ops::max_backward(x, *axis, argmax, g)?]),
            Reshape(x) => Ok(vec![g.reshape(x.shape())?]),
            Permute { perm, .. } => Ok(vec![g.permute(&ops::inverse_permutation(perm))?]),
            Slice { x, axis, start } => Ok(vec![ops::slice_backward(x.shape(), *axis, *start, g)?]),
            Concat { xs, axis } => ops::concat_backward(xs, *axis, g),
            Expand(x) => Ok(vec![g.sum_to_shape(x.shape())?]),
            Softmax(_) => Ok(vec![ops::softmax_backward(out, g, false)?]),
            LogSoftmax(_) => Ok(vec![ops::softmax_backward(out, g, true)?]),
            CrossEntropy { logits, targets } => {
                Ok(vec![ops::cross_entropy_backward(logits, targets, g)?])
            }
            Embedding { weight, indices } => ops::embedding_backward(weight, indices, g),
            LayerNorm {
                x, weight, stats, ..
            } => ops::layernorm_backward(x, weight, stats, g),
            Attention {
                q,
                k,
                v,
                heads,
                lse,
            } => ops::attention_backward(q, k, v, out, lse, *heads, g),
            AttentionPacked { qkv, heads, lse } => {
                ops::attention_packed_backward(qkv, out, lse, *heads, g)
            }
            Conv2d {
                x,
                weight,
                bias,
                stride,
                padding,
            } => ops::conv2d_backward(x, weight, bias.is_some(), *stride, *padding, g),
            MaxPool2d {
                x,
                argmax,
                k,
                stride,
            } => Ok(vec![ops::maxpool2d_backward(x, argmax, *k, *stride, g)?]),
            Dropout { p, seed, .. } => Ok(vec![g.dropout(*p, *seed)?]),
        }
    }
}

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
            for input in op.inputs() {
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
            grads.insert(self.id(), Tensor::full(self.shape(), 1.0, self.device())?);
            for node in topological_order(self).into_iter().rev() {
                let Some(op) = node.op() else { continue };
                // An intermediate's gradient is not needed once passed on.
                let Some(g) = grads.remove(&node.id()) else {
                    continue;
                };
                let pairs = one_gradient_per_input(op.inputs(), op.backward(&node, &g)?)?;
                for (input, grad) in pairs {
                    if !input.requires_grad() {
                        continue;
                    }
                    let sum = match grads.remove(&input.id()) {
                        Some(prev) => prev.add(&grad)?,
                        None => grad,
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
