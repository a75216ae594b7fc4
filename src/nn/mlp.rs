//! The multilayer perceptron: Linear layers with an activation between them.

use super::{prefixed, Activation, Init, Linear, Model, Module};
use crate::{Error, Result, Tensor};
use serde::{Deserialize, Serialize};

/// Shape of an MLP: `depth` hidden layers of `width`, then a linear read-out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MlpConfig {
    pub inputs: usize,
    pub outputs: usize,
    pub depth: usize,
    pub width: usize,
    pub activation: Activation,
}

/// torch: `layers` is an nn.ModuleList of nn.Linear.
pub struct Mlp {
    layers: Vec<Linear>,
    activation: Activation,
}

impl Mlp {
    pub fn new(config: &MlpConfig, init: &mut Init) -> Result<Mlp> {
        if config.width == 0 || config.inputs == 0 || config.outputs == 0 {
            return Err(Error::Invalid {
                op: "mlp",
                why: "inputs, width and outputs must be at least 1".into(),
            });
        }
        let mut sizes = vec![config.inputs];
        sizes.extend(std::iter::repeat_n(config.width, config.depth));
        sizes.push(config.outputs);
        let layers = sizes
            .windows(2)
            .map(|w| Linear::new(init, w[0], w[1], true))
            .collect::<Result<_>>()?;
        Ok(Mlp {
            layers,
            activation: config.activation,
        })
    }
}

impl Module for Mlp {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        self.layers
            .iter()
            .enumerate()
            .flat_map(|(i, l)| prefixed(&format!("layers.{i}"), l.parameters()))
            .collect()
    }
}

impl Model for Mlp {
    /// x [batch, inputs] (any trailing shape is flattened) -> logits [batch, outputs].
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.run(x, None)
    }

    /// Each hidden layer's output after its activation: [batch, width] as "hidden N".
    fn insides(&self, x: &Tensor) -> Result<Vec<(String, Tensor)>> {
        let mut hidden = Vec::new();
        self.run(x, Some(&mut hidden))?;
        Ok(hidden)
    }
}

impl Mlp {
    /// The forward pass, each hidden layer's output added to `hidden` if given (named only
    /// then: a training step formats nothing).
    fn run(&self, x: &Tensor, mut hidden: Option<&mut Vec<(String, Tensor)>>) -> Result<Tensor> {
        let batch = x.shape()[0];
        let mut h = x.reshape(&[batch, x.numel() / batch.max(1)])?;
        for (i, layer) in self.layers.iter().enumerate() {
            if i + 1 == self.layers.len() {
                return layer.forward(&h);
            }
            h = layer.forward_activated(&h, self.activation)?;
            if let Some(hidden) = hidden.as_deref_mut() {
                hidden.push((format!("hidden {}", i + 1), h.clone()));
            }
        }
        Ok(h)
    }
}
