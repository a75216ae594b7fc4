//! The convolutional network for digits: conv-ReLU-maxpool stages, then two Linear layers.

use super::{prefixed, Activation, Conv2d, Init, Linear, Model, Module};
use crate::{Error, Result, Tensor};
use serde::{Deserialize, Serialize};

/// Channels of each 3×3 conv stage (each followed by ReLU and a 2×2 max-pool), the hidden
/// width of the classifier, and the input image size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CnnConfig {
    pub channels: Vec<usize>,
    pub hidden: usize,
    pub classes: usize,
    pub image: usize,
}

impl Default for CnnConfig {
    /// The cnn_mnist shape of the benchmarks.
    fn default() -> Self {
        CnnConfig {
            channels: vec![32, 64],
            hidden: 128,
            classes: 10,
            image: 28,
        }
    }
}

/// torch: conv1, conv2, ... then fc1 and fc2.
pub struct Cnn {
    convs: Vec<Conv2d>,
    fc1: Linear,
    fc2: Linear,
}

impl Cnn {
    pub fn new(config: &CnnConfig, init: &mut Init) -> Result<Cnn> {
        if config.channels.is_empty() || config.channels.contains(&0) || config.hidden == 0 {
            return Err(Error::Invalid {
                op: "cnn",
                why: "every layer needs at least one channel".into(),
            });
        }
        let side = config.image >> config.channels.len();
        if side == 0 {
            return Err(Error::Invalid {
                op: "cnn",
                why: format!(
                    "{} pooling stages shrink a {}-pixel image to nothing",
                    config.channels.len(),
                    config.image
                ),
            });
        }
        let mut convs = Vec::new();
        let mut inputs = 1;
        for &c in &config.channels {
            convs.push(Conv2d::new(init, inputs, c, 3, 1, 1)?);
            inputs = c;
        }
        let flat = inputs * side * side;
        Ok(Cnn {
            convs,
            fc1: Linear::new(init, flat, config.hidden, true)?,
            fc2: Linear::new(init, config.hidden, config.classes, true)?,
        })
    }
}

impl Module for Cnn {
    fn parameters(&self) -> Vec<(String, Tensor)> {
        let mut p: Vec<_> = self
            .convs
            .iter()
            .enumerate()
            .flat_map(|(i, c)| prefixed(&format!("conv{}", i + 1), c.parameters()))
            .collect();
        p.extend(prefixed("fc1", self.fc1.parameters()));
        p.extend(prefixed("fc2", self.fc2.parameters()));
        p
    }
}

impl Model for Cnn {
    /// x [batch, 1, H, W] (or [batch, H*W]) -> logits [batch, classes].
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.run(x, None)
    }

    /// Each conv stage's feature maps after its ReLU, before pooling: [batch, channels, side,
    /// side] as "convN".
    fn insides(&self, x: &Tensor) -> Result<Vec<(String, Tensor)>> {
        let mut maps = Vec::new();
        self.run(x, Some(&mut maps))?;
        Ok(maps)
    }
}

impl Cnn {
    /// The forward pass, each stage's feature maps added to `maps` if given (named only then:
    /// a training step formats nothing).
    fn run(&self, x: &Tensor, mut maps: Option<&mut Vec<(String, Tensor)>>) -> Result<Tensor> {
        let batch = x.shape()[0];
        let side = ((x.numel() / batch.max(1)) as f64).sqrt() as usize;
        let mut h = x.reshape(&[batch, 1, side, side])?;
        for (i, conv) in self.convs.iter().enumerate() {
            let mapped = conv.forward_relu(&h)?;
            h = mapped.maxpool2d(2, 2)?;
            if let Some(maps) = maps.as_deref_mut() {
                maps.push((format!("conv{}", i + 1), mapped));
            }
        }
        let h = h.reshape(&[batch, h.numel() / batch])?;
        self.fc2
            .forward(&self.fc1.forward_activated(&h, Activation::Relu)?)
    }
}
