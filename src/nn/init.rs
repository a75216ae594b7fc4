//! Seeded parameter initialisation, as PyTorch's defaults do it.

use crate::{Device, Error, Result, Tensor};

/// The largest single tensor the CPU backend accepts (1 GiB of f32), for a parameter here and
/// for any tensor in a run's footprint (train::Footprint).
pub const CPU_MAX_BYTES: u64 = 1 << 30;
use rand::{rngs::SmallRng, Rng, SeedableRng};

/// A seeded source of initial parameter values.
pub struct Init {
    rng: SmallRng,
    device: Device,
    /// Whether the parameters made now are frozen (LoRA's base): leaves that need no gradient.
    frozen: bool,
    /// Whether frozen weights made by `weight` are held in f16 (`Config::frozen_f16`).
    frozen_f16: bool,
    /// Which random draws give zeros instead, their values about to be replaced.
    placeholders: Placeholders,
}

/// Parameters made as zeros rather than drawn, since a file is about to replace them.
#[derive(Clone, Copy, PartialEq)]
enum Placeholders {
    None,
    /// Every parameter (a checkpoint loaded whole).
    All,
    /// The frozen ones (LoRA's base, loaded under adapters that are drawn as usual).
    Frozen,
}

impl Init {
    pub fn new(seed: u64, device: &Device) -> Init {
        Init {
            rng: SmallRng::seed_from_u64(seed),
            device: device.clone(),
            frozen: false,
            frozen_f16: false,
            placeholders: Placeholders::None,
        }
    }

    /// Parameters of the right shapes whose values a checkpoint is about to replace: zeros
    /// made on the device, nothing drawn (GPT-2 124M's 124 M draws took seconds on the CPU).
    pub fn for_loading(device: &Device) -> Init {
        Init {
            placeholders: Placeholders::All,
            ..Init::new(0, device)
        }
    }

    /// As `new`, with the frozen parameters (a LoRA run's base, about to be loaded) made as
    /// zeros; the adapters are drawn from `seed`.
    pub fn for_loading_base(seed: u64, device: &Device) -> Init {
        Init {
            placeholders: Placeholders::Frozen,
            ..Init::new(seed, device)
        }
    }

    /// Whether the parameter made now is a placeholder.
    fn placeholder(&self) -> bool {
        match self.placeholders {
            Placeholders::None => false,
            Placeholders::All => true,
            Placeholders::Frozen => self.frozen,
        }
    }

    /// Makes the parameters that follow frozen (or trainable again).
    pub fn set_frozen(&mut self, frozen: bool) {
        self.frozen = frozen;
    }

    /// Makes the frozen weights that `weight` (and `normal_padded`) make next f16, or f32 again.
    pub fn hold_frozen_in_f16(&mut self, f16: bool) {
        self.frozen_f16 = f16;
    }

    /// A projection's weight or an embedding's table, N(0, std²): read only by products (as
    /// their second operand) and gathers, so a frozen one may be held in f16
    /// (`hold_frozen_in_f16`).
    pub fn weight(&mut self, shape: &[usize], std: f64) -> Result<Tensor> {
        if !self.in_f16() {
            return self.normal(shape, std);
        }
        if self.placeholder() {
            return self.zeros(shape);
        }
        let v = self.normal_values(self.count(shape)?, std);
        self.stored(v, shape)
    }

    /// Whether the parameter made now is held in f16.
    pub(crate) fn in_f16(&self) -> bool {
        self.frozen && self.frozen_f16
    }

    /// `values` as the parameter made now is held: f32, or f16 (`in_f16`).
    fn stored(&self, values: Vec<f64>, shape: &[usize]) -> Result<Tensor> {
        match self.in_f16() {
            true => Tensor::from_f64_as_f16(values, shape, &self.device),
            false => Tensor::from_f64(values, shape, &self.device),
        }
    }

    /// Zeros as the parameter made now is held: f32 (filled by a dispatch), or f16 (cleared).
    fn zeros(&self, shape: &[usize]) -> Result<Tensor> {
        match self.in_f16() {
            true => Tensor::zeros_f16(shape, &self.device),
            false => Tensor::full(shape, 0.0, &self.device),
        }
    }

    /// A new parameter: a leaf that needs a gradient unless frozen.
    fn leaf(&self, t: Tensor) -> Tensor {
        match self.frozen {
            true => t,
            false => t.with_grad(),
        }
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The element count of `shape`, refused before anything is allocated when the device
    /// could not hold it (or it would not even fit in memory here).
    fn count(&self, shape: &[usize]) -> Result<usize> {
        let n = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
        let bytes = n.and_then(|n| n.checked_mul(4)).map(|b| b as u64);
        match (bytes, &self.device) {
            (Some(b), Device::Gpu(gpu)) => gpu.check_size(b).map(|_| n.unwrap_or(0)),
            (Some(b), Device::Cpu) if b <= CPU_MAX_BYTES => Ok(n.unwrap_or(0)),
            (b, _) => Err(Error::TooLarge {
                limit: "memory for one parameter",
                requested: b.unwrap_or(u64::MAX),
                max: CPU_MAX_BYTES,
            }),
        }
    }

    /// U(-bound, bound).
    pub fn uniform(&mut self, shape: &[usize], bound: f64) -> Result<Tensor> {
        if self.placeholder() {
            return self.constant(shape, 0.0);
        }
        let n = shape.iter().product();
        let v = (0..n)
            .map(|_| self.rng.random_range(-bound..=bound))
            .collect();
        Ok(self.leaf(Tensor::from_f64(v, shape, &self.device)?))
    }

    /// N(0, std²) by Box–Muller.
    pub fn normal(&mut self, shape: &[usize], std: f64) -> Result<Tensor> {
        if self.placeholder() {
            return self.constant(shape, 0.0);
        }
        let v = self.normal_values(self.count(shape)?, std);
        Ok(self.leaf(Tensor::from_f64(v, shape, &self.device)?))
    }

    /// As `normal` for `shape` ([rows, cols]), stored as the first rows of a table `pad` rows
    /// longer whose other rows are zeros: the parameter (a view of the table) and the table.
    pub fn normal_padded(
        &mut self,
        shape: [usize; 2],
        pad: usize,
        std: f64,
    ) -> Result<(Tensor, Tensor)> {
        let [rows, cols] = shape;
        let padded = [rows + pad, cols];
        let table = match self.placeholder() {
            true => self.zeros(&padded)?,
            false => {
                let mut v = self.normal_values(self.count(&shape)?, std);
                v.resize(self.count(&padded)?, 0.0);
                self.stored(v, &padded)?
            }
        };
        Ok((self.leaf(table.part(0, &shape)), table))
    }

    /// `n` draws of N(0, std²) by Box–Muller.
    fn normal_values(&mut self, n: usize, std: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                let u1: f64 = self.rng.random_range(f64::EPSILON..1.0);
                let u2: f64 = self.rng.random();
                std * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect()
    }

    /// A constant.
    pub fn constant(&mut self, shape: &[usize], value: f32) -> Result<Tensor> {
        self.count(shape)?;
        Ok(self.leaf(Tensor::full(shape, value, &self.device)?))
    }
}
