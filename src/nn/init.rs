//! Seeded parameter initialisation, as PyTorch's defaults do it.

use crate::{Device, Result, Tensor};
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// A seeded source of initial parameter values.
pub struct Init {
    rng: SmallRng,
    device: Device,
}

impl Init {
    pub fn new(seed: u64, device: &Device) -> Init {
        Init {
            rng: SmallRng::seed_from_u64(seed),
            device: device.clone(),
        }
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// U(-bound, bound), a leaf that needs a gradient.
    pub fn uniform(&mut self, shape: &[usize], bound: f64) -> Result<Tensor> {
        let n = shape.iter().product();
        let v = (0..n)
            .map(|_| self.rng.random_range(-bound..=bound))
            .collect();
        Ok(Tensor::from_f64(v, shape, &self.device)?.with_grad())
    }

    /// N(0, std²) by Box–Muller.
    pub fn normal(&mut self, shape: &[usize], std: f64) -> Result<Tensor> {
        let n: usize = shape.iter().product();
        let v = (0..n)
            .map(|_| {
                let u1: f64 = self.rng.random_range(f64::EPSILON..1.0);
                let u2: f64 = self.rng.random();
                std * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect();
        Ok(Tensor::from_f64(v, shape, &self.device)?.with_grad())
    }

    /// A constant, a leaf that needs a gradient.
    pub fn constant(&mut self, shape: &[usize], value: f32) -> Result<Tensor> {
        Ok(Tensor::full(shape, value, &self.device)?.with_grad())
    }
}
