//! Gradient flow: per layer, how large the gradient of a step was and how far that step's
//! update moved the weights for their size. Vanishing or exploding gradients and a learning
//! rate too large or too small for some layers show here first.

use super::insides::read_all;
use super::Session;
use crate::autograd::Gradients;
use crate::{no_grad, Device, Error, Result, Tensor};

/// One layer's figures at a watched step.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LayerFlow {
    /// The layer's name: its parameters' names without ".weight" or ".bias".
    pub layer: String,
    /// The L2 norm of the gradients of all the layer's parameters.
    pub grad_norm: f32,
    /// ‖update‖ / ‖weights before it‖ over the layer's parameters (about 1e-3 is healthy).
    pub update_ratio: f32,
}

/// The gradient flow of a watched step.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Flow {
    pub step: u64,
    pub layers: Vec<LayerFlow>,
    /// Whether the loss scale of mixed precision skipped the step: its gradients overflowed
    /// f16's range (not a divergence: the scale halves and the next step goes on).
    #[serde(default)]
    pub skipped: bool,
}

impl Flow {
    /// The flow of `step` from each layer's squared norms of its gradient, of its update and
    /// of its weights before it. Under a loss scale (`scaled`), gradients that are not finite
    /// mean the step was skipped (the update kernels skip exactly those).
    fn of(step: u64, names: Vec<String>, [g, u, w]: [&[f32]; 3], scaled: bool) -> Flow {
        let layers: Vec<LayerFlow> = names
            .into_iter()
            .enumerate()
            .map(|(i, layer)| LayerFlow {
                layer,
                grad_norm: g[i].sqrt(),
                update_ratio: (u[i] / w[i].max(f32::MIN_POSITIVE)).sqrt(),
            })
            .collect();
        let skipped = scaled && layers.iter().any(|l| !l.grad_norm.is_finite());
        Flow {
            step,
            layers,
            skipped,
        }
    }
}

/// The layer a parameter belongs to.
fn layer_of(name: &str) -> &str {
    name.strip_suffix(".weight")
        .or_else(|| name.strip_suffix(".bias"))
        .unwrap_or(name)
}

/// The layers of `params` in order, each with the indices of its parameters.
fn layers(params: &[(String, Tensor)]) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, (name, _)) in params.iter().enumerate() {
        let layer = layer_of(name);
        match out.iter_mut().find(|(l, _)| l == layer) {
            Some((_, members)) => members.push(i),
            None => out.push((layer.to_string(), vec![i])),
        }
    }
    out
}

/// Per layer, the sum over its parameters of `f(parameter index)`, as one [layers] tensor.
fn per_layer(
    params: &[(String, Tensor)],
    device: &Device,
    f: impl Fn(usize) -> Result<Tensor>,
) -> Result<Tensor> {
    no_grad(|| {
        let sums = layers(params)
            .iter()
            .map(|(_, members)| {
                members
                    .iter()
                    .try_fold(Tensor::zeros(&[1], device)?, |acc, &i| acc.add(&f(i)?))
            })
            .collect::<Result<Vec<_>>>()?;
        Tensor::concat(&sums, 0)
    })
}

fn squared_sum(t: &Tensor) -> Result<Tensor> {
    t.mul(t)?.sum_all()?.reshape(&[1])
}

/// The squared gradient norm of each layer, on the device.
pub(super) fn gradient_squares(
    params: &[(String, Tensor)],
    grads: &Gradients,
    device: &Device,
) -> Result<Tensor> {
    per_layer(params, device, |i| {
        let (name, p) = &params[i];
        let g = grads.get(p).ok_or_else(|| Error::Invalid {
            op: "flow",
            why: format!("{name} has no gradient"),
        })?;
        squared_sum(g)
    })
}

impl Session {
    /// Asks the next training step to keep its gradient norms for `flow` (a few small
    /// reductions, so only the steps before an evaluation are watched).
    pub fn watch_next_step(&mut self) {
        self.watch = true;
    }

    /// The gradient flow of the latest watched step, if one was taken: its gradient norms,
    /// and the update it made, relative to the weights before it. The update is read from the
    /// latest step, so this is exact when no step was taken after the watched one.
    pub async fn flow(&self) -> Result<Option<Flow>> {
        let Some((step, grad_sq)) = &self.watched else {
            return Ok(None);
        };
        let params = &self.params;
        let update_sq = per_layer(params, &self.device, |i| {
            squared_sum(&params[i].1.sub(self.tried.param(i))?)
        })?;
        let weight_sq = per_layer(params, &self.device, |i| squared_sum(self.tried.param(i)))?;
        let named = vec![
            ("gradients".to_string(), grad_sq.clone()),
            ("updates".to_string(), update_sq),
            ("weights".to_string(), weight_sq),
        ];
        let read = read_all(named).await?;
        let values = [
            &read[0].values[..],
            &read[1].values[..],
            &read[2].values[..],
        ];
        let names = layers(params).into_iter().map(|(name, _)| name).collect();
        let scaled = self.optimizer.loss_scale().is_some();
        Ok(Some(Flow::of(*step, names, values, scaled)))
    }
}

#[cfg(test)]
mod tests {
    use super::{layer_of, Flow};

    #[test]
    fn gradients_past_f16s_range_under_a_loss_scale_are_a_skipped_step_not_a_divergence() {
        let names = || vec!["a".to_string(), "b".to_string()];
        let (g, u, w) = ([4.0, f32::INFINITY], [0.0, 0.0], [1.0, 1.0]);
        let scaled = Flow::of(7, names(), [&g, &u, &w], true);
        assert!(scaled.skipped);
        assert_eq!(scaled.layers[0].grad_norm, 2.0);
        assert!(!Flow::of(7, names(), [&g, &u, &w], false).skipped);
        let finite = [4.0, 9.0];
        assert!(!Flow::of(7, names(), [&finite, &u, &w], true).skipped);
    }

    #[test]
    fn a_layer_is_its_parameters_name_without_weight_or_bias() {
        assert_eq!(layer_of("blocks.0.attn.qkv.weight"), "blocks.0.attn.qkv");
        assert_eq!(layer_of("layers.2.bias"), "layers.2");
        assert_eq!(layer_of("tok_emb.weight"), "tok_emb");
        assert_eq!(layer_of("scale"), "scale");
    }
}
