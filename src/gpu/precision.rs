//! The precision products run in, asked for by the user (`Precision`) and allowed by the adapter
//! (`F16Products`): f32 everywhere, or mixed precision, where a product rounds its operands to
//! f16 as it stages them and multiplies them on the GPU's matrix units, adding in f32, or where
//! it has none, on its ordinary f16 arithmetic (set on a device by `Gpu::set_precision`,
//! below). Master weights and optimizer state stay f32 either way; which values a mixed run
//! holds in f16 is docs/TRAINING.md's "Mixed precision".

use super::matrix_units::{Lacking, MatrixUnits};
use super::{Gpu, Tuning};
use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The precision a run asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Precision {
    /// Every product in f32 (the default: what the tests compare against PyTorch).
    #[default]
    F32,
    /// Products with f16 operands: on matrix units where the adapter offers them, else on its
    /// f16 arithmetic; refused where it offers no shader-f16.
    F16,
    /// f16 where the adapter offers matrix units for it, else f32: without them, f16 products
    /// are faster only on some GPUs (those that pack two f16 operations in one), and no adapter
    /// says which.
    Auto,
}

impl FromStr for Precision {
    type Err = String;

    fn from_str(s: &str) -> Result<Precision, String> {
        match s {
            "f32" => Ok(Precision::F32),
            "f16" => Ok(Precision::F16),
            "auto" => Ok(Precision::Auto),
            other => Err(format!(
                "precision {other:?} is not one of f32, f16 or auto"
            )),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::F16 => "f16",
            Precision::Auto => "auto",
        })
    }
}

/// The kernel f16 products run on (`Tuning::f16_products`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum F16Products {
    /// The GPU's matrix units, f32 sums of exact products.
    MatrixUnits(MatrixUnits),
    /// Its ordinary f16 arithmetic, where it offers shader-f16 but no matrix units to webgrad
    /// (most GPUs in Chrome): shaders/matmul_f16_alu.wgsl, f16 sums of 16 products added in
    /// f32.
    Arithmetic,
}

impl F16Products {
    /// The product kernel's source.
    pub(crate) fn kernel_source(self) -> &'static str {
        match self {
            F16Products::MatrixUnits(units) => units.kernel_source(),
            F16Products::Arithmetic => include_str!("../../shaders/matmul_f16_alu.wgsl"),
        }
    }
}

/// What a run asked for and what it got, with the reason, for the CLI and the page to say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrecisionChoice {
    pub asked: Precision,
    /// The kernel products run on with f16 operands; None: f32.
    pub products: Option<F16Products>,
    pub why: String,
}

impl PrecisionChoice {
    /// The choice on an adapter named `adapter` offering `units` (or lacking what for them) and
    /// shader-f16 or not, or an error where f16 was asked for and it offers neither.
    pub fn of(
        asked: Precision,
        units: Result<MatrixUnits, Lacking>,
        shader_f16: bool,
        adapter: &str,
    ) -> Result<PrecisionChoice, String> {
        let (products, why) = match (asked, units) {
            (Precision::F32, _) => (None, "f32 was asked for".to_string()),
            (Precision::F16 | Precision::Auto, Ok(units)) => (
                Some(F16Products::MatrixUnits(units)),
                format!("{adapter} multiplies f16 on matrix units, adding in f32"),
            ),
            (Precision::F16, Err(lacking)) if shader_f16 => (
                Some(F16Products::Arithmetic),
                format!(
                    "{adapter} multiplies f16 on its f16 arithmetic, adding 16 products at a \
                     time in f16 and those sums in f32; it offers no f16 matrix units to \
                     webgrad: {lacking}"
                ),
            ),
            (Precision::F16, Err(lacking)) => {
                // In a browser, the flag that would give shader-f16 where there is one.
                let lacking = match lacking {
                    Lacking::ShaderF16(b) | Lacking::Matrices(b) => Lacking::ShaderF16(b),
                    _ => Lacking::ShaderF16(None),
                };
                return Err(format!(
                    "f16 was asked for, but {adapter} offers webgrad neither f16 matrix units \
                     nor f16 arithmetic: {lacking}; use f32 or auto"
                ));
            }
            (Precision::Auto, Err(lacking)) => (
                None,
                match shader_f16 {
                    true => format!(
                        "{adapter} offers no f16 matrix units to webgrad: {lacking}; f16, asked \
                         for, runs on its f16 arithmetic, faster than f32 on some GPUs only"
                    ),
                    false => format!("{adapter} offers no f16 matrix units to webgrad: {lacking}"),
                },
            ),
        };
        Ok(PrecisionChoice {
            asked,
            products,
            why,
        })
    }

    /// True when products run with f16 operands.
    pub fn f16(&self) -> bool {
        self.products.is_some()
    }

    /// Whether frozen weights (a LoRA run's base: src/tensor/half.rs) are held in f16: where
    /// products run in f16, which round them to f16 anyway, in half the memory. Any GPU could
    /// hold them so (the products widen them as they read them), but without matrix units the
    /// widening cost time: GPT-2's fine-tuning in Chrome on an H200 without them took 15 % longer
    /// a step for 21 % less memory (docs/TRAINING.md, "GPT-2").
    pub fn frozen_f16(&self) -> bool {
        self.f16()
    }

    /// One sentence: "Products in f16 (auto): …", and where frozen weights are held in f16, a
    /// second saying so.
    pub fn sentence(&self) -> String {
        let got = if self.f16() { "f16" } else { "f32" };
        let products = format!("Products in {got} ({}): {}.", self.asked, self.why);
        match self.frozen_f16() {
            true => products + " Frozen weights (a fine-tuned model's base) are held in f16 too.",
            false => products,
        }
    }
}

impl Gpu {
    /// Sets the precision products run in (`PrecisionChoice`: f16 on the device's matrix units,
    /// or on its f16 arithmetic where asked for), and says what was chosen and why; an error
    /// where f16 is asked for and cannot be had. Products planned after it take it; only optimizers made after it
    /// scale their losses (`Optimizer::for_device`), so a run sets it before its session.
    pub fn set_precision(&self, asked: Precision) -> crate::Result<PrecisionChoice> {
        let choice = PrecisionChoice::of(
            asked,
            self.matrix_units,
            self.shader_f16(),
            &self.adapter_name(),
        )
        .map_err(|why| Error::Invalid {
            op: "precision",
            why,
        })?;
        self.tuning.set(Tuning {
            f16_products: choice.products,
            ..self.tuning.get()
        });
        *self.precision.borrow_mut() = Some(choice.clone());
        Ok(choice)
    }

    /// Whether products run in f16 (mixed precision) under the latest `set_precision`.
    pub fn products_f16(&self) -> bool {
        self.precision().is_some_and(|c| c.f16())
    }

    /// Whether frozen weights are held in f16 (`PrecisionChoice::frozen_f16`) under the
    /// latest `set_precision`.
    pub fn frozen_f16(&self) -> bool {
        self.precision().is_some_and(|c| c.frozen_f16())
    }

    /// What the latest `set_precision` chose and why; None before one.
    pub fn precision(&self) -> Option<PrecisionChoice> {
        self.precision.borrow().clone()
    }

    /// The f16 matrix units this device offers, if any.
    pub fn matrix_units(&self) -> Option<MatrixUnits> {
        self.matrix_units.ok()
    }

    /// Whether this device was opened with shader-f16 (f16 products without matrix units).
    pub fn shader_f16(&self) -> bool {
        self.device.features().contains(wgpu::Features::SHADER_F16)
    }
}

/// Opens the device with `features`, with shader-f16 and the f16 matrix units where the
/// adapter offers them (f32 runs too: the device opens before a run asks for a precision):
/// natively wgpu's cooperative matrices, in Chrome its subgroup matrices, asked for by our own
/// glue.
pub(super) async fn open_device(
    adapter: &wgpu::Adapter,
    limits: &wgpu::Limits,
    features: wgpu::Features,
) -> crate::Result<(wgpu::Device, wgpu::Queue, Result<MatrixUnits, Lacking>)> {
    let features = features | (adapter.features() & wgpu::Features::SHADER_F16);
    #[cfg(not(target_arch = "wasm32"))]
    let units = match std::env::var(super::matrix_units::MATRIX_UNITS_VAR).as_deref() {
        Ok("off") => Err(Lacking::TurnedOff),
        _ => MatrixUnits::of(adapter),
    };
    #[cfg(not(target_arch = "wasm32"))]
    let features = match units {
        Ok(_) => features | MatrixUnits::features(),
        Err(_) => features,
    };
    #[cfg(target_arch = "wasm32")]
    super::subgroup_matrix::ask();
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("webgrad"),
            required_limits: limits.clone(),
            required_features: features,
            // SAFETY: wgpu's experimental features (cooperative matrices) are asked for where
            // the adapter offers them, and only shaders/matmul_coop.wgsl uses them, checked
            // against the CPU by tests/half.rs.
            #[cfg(not(target_arch = "wasm32"))]
            experimental_features: match units {
                Ok(_) => unsafe { wgpu::ExperimentalFeatures::enabled() },
                Err(_) => wgpu::ExperimentalFeatures::disabled(),
            },
            ..Default::default()
        })
        .await
        .map_err(|e| Error::DeviceRequest(e.to_string()))?;
    #[cfg(target_arch = "wasm32")]
    let units = super::subgroup_matrix::granted();
    Ok((device, queue, units))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::Browser;

    #[test]
    fn auto_takes_f16_only_on_matrix_units_and_f16_takes_the_arithmetic_where_it_has_none() {
        let units = Ok(MatrixUnits::SubgroupMatrix);
        let lacking = Err(Lacking::Matrices(None));
        let with = PrecisionChoice::of(Precision::Auto, units, true, "GPU").unwrap();
        let without = PrecisionChoice::of(Precision::Auto, lacking, true, "GPU").unwrap();
        let matrices = units.ok().map(F16Products::MatrixUnits);
        assert_eq!((with.products, without.products), (matrices, None));
        assert!(without.sentence().starts_with("Products in f32 (auto)"));
        assert!(without
            .why
            .contains("f16, asked for, runs on its f16 arithmetic"));
        // Frozen weights in f16 where the products are.
        assert!(with.frozen_f16() && !without.frozen_f16());
        assert!(with.sentence().ends_with("are held in f16 too."));
        let f32 = PrecisionChoice::of(Precision::F32, units, true, "GPU").unwrap();
        assert!(!f32.f16() && !f32.frozen_f16());
        // f16 without matrix units: on the arithmetic where the device has shader-f16.
        let arithmetic = PrecisionChoice::of(Precision::F16, lacking, true, "GPU").unwrap();
        assert_eq!(arithmetic.products, Some(F16Products::Arithmetic));
        assert!(arithmetic
            .sentence()
            .starts_with("Products in f16 (f16): GPU multiplies f16 on its f16 arithmetic"));
        let refused = PrecisionChoice::of(Precision::F16, lacking, false, "llvmpipe").unwrap_err();
        assert!(
            refused.contains("llvmpipe offers webgrad neither f16 matrix units nor f16 arithmetic"),
            "{refused}"
        );
        // Chrome on NVIDIA is told the flag that gives shader-f16.
        let nvidia = Err(Lacking::Matrices(Some(Browser::Chrome { nvidia: true })));
        let refused = PrecisionChoice::of(Precision::F16, nvidia, false, "GPU").unwrap_err();
        assert!(refused.contains("vulkan_enable_f16_on_nvidia"), "{refused}");
        assert_eq!("auto".parse::<Precision>(), Ok(Precision::Auto));
        assert!("bf16".parse::<Precision>().is_err());
    }
}
