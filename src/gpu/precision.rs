//! The precision products run in, asked for by the user (`Precision`) and allowed by the adapter
//! (`MatrixUnits`): f32 everywhere, or mixed precision, where a product rounds its operands to
//! f16 as it stages them and multiplies them on the GPU's matrix units, adding in f32 (set on a
//! device by `Gpu::set_precision`, below). Tensors, master weights and optimizer state stay f32
//! either way.

use super::{Gpu, Tuning};
use crate::error::Error;
use std::fmt;
use std::str::FromStr;

/// The precision a run asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// Every product in f32 (the default: what the tests compare against PyTorch).
    #[default]
    F32,
    /// Products with f16 operands and f32 sums; refused where the adapter cannot.
    F16,
    /// f16 where the adapter offers matrix units for it, else f32.
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

/// What the adapter offers for f16 products: cooperative matrices of 16 × 16 × 16 with f16
/// operands and f32 sums, on subgroups of 32 (the kernel, shaders/matmul_coop.wgsl, gives each
/// of a workgroup's 8 subgroups its own block of C). Natively through wgpu's experimental
/// cooperative matrices (Vulkan's VK_KHR_cooperative_matrix: NVIDIA's tensor cores); none in
/// the browser, whose subgroup matrices wgpu does not ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixUnits;

/// The subgroup width the kernel is written for.
const SUBGROUP_WIDTH: u32 = 32;

impl MatrixUnits {
    /// The features a device must be opened with for the kernel.
    pub(crate) fn features() -> wgpu::Features {
        wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
            | wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP
    }

    /// Whether `adapter` offers them: the features, the 16 × 16 × 16 f16 → f32 configuration
    /// among its cooperative matrices, and subgroups always 32 wide.
    pub(crate) fn of(adapter: &wgpu::Adapter) -> Option<MatrixUnits> {
        use wgpu::CooperativeScalarType::{F16, F32};
        if !adapter.features().contains(MatrixUnits::features()) {
            return None;
        }
        let sixteens = adapter.cooperative_matrix_properties().iter().any(|c| {
            (c.m_size, c.n_size, c.k_size) == (16, 16, 16) && c.ab_type == F16 && c.cr_type == F32
        });
        let info = adapter.get_info();
        let width = (info.subgroup_min_size, info.subgroup_max_size);
        (sixteens && width == (SUBGROUP_WIDTH, SUBGROUP_WIDTH)).then_some(MatrixUnits)
    }
}

/// What a run asked for and what it got, with the reason, for the CLI and the page to say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrecisionChoice {
    pub asked: Precision,
    /// True when products run with f16 operands on matrix units.
    pub f16: bool,
    pub why: String,
}

impl PrecisionChoice {
    /// The choice on an adapter named `adapter` offering `units`, or an error where f16 was
    /// asked for and it offers none.
    pub fn of(
        asked: Precision,
        units: Option<MatrixUnits>,
        adapter: &str,
    ) -> Result<PrecisionChoice, String> {
        let offered = units.is_some();
        let why = match (asked, offered) {
            (Precision::F32, _) => "f32 was asked for".to_string(),
            (Precision::F16 | Precision::Auto, true) => {
                format!("{adapter} multiplies f16 on matrix units, adding in f32")
            }
            (Precision::F16, false) => {
                return Err(format!(
                    "f16 was asked for, but {adapter} offers no f16 matrix units to webgrad \
                     (16×16×16 cooperative matrices with f32 sums on subgroups of 32); \
                     use --precision f32 or auto"
                ))
            }
            (Precision::Auto, false) => format!("{adapter} offers no f16 matrix units to webgrad"),
        };
        Ok(PrecisionChoice {
            asked,
            f16: offered && asked != Precision::F32,
            why,
        })
    }

    /// One sentence: "Products in f16 (auto): …".
    pub fn sentence(&self) -> String {
        let got = if self.f16 { "f16" } else { "f32" };
        format!("Products in {got} ({}): {}.", self.asked, self.why)
    }
}

impl Gpu {
    /// Sets the precision products run in (`PrecisionChoice`: f16 only where the device has
    /// matrix units for it), and says what was chosen and why; an error where f16 is asked for
    /// and cannot be had. Products planned after it take it; only optimizers made after it
    /// scale their losses (`Optimizer::for_device`), so a run sets it before its session.
    pub fn set_precision(&self, asked: Precision) -> crate::Result<PrecisionChoice> {
        let choice =
            PrecisionChoice::of(asked, self.matrix_units, &self.adapter_name()).map_err(|why| {
                Error::Invalid {
                    op: "precision",
                    why,
                }
            })?;
        self.tuning.set(Tuning {
            f16_products: choice.f16,
            ..self.tuning.get()
        });
        Ok(choice)
    }

    /// The f16 matrix units this device offers, if any.
    pub fn matrix_units(&self) -> Option<MatrixUnits> {
        self.matrix_units
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_f16_only_where_offered_and_f16_is_refused_where_not() {
        let with = PrecisionChoice::of(Precision::Auto, Some(MatrixUnits), "GPU").unwrap();
        let without = PrecisionChoice::of(Precision::Auto, None, "GPU").unwrap();
        assert!(with.f16 && !without.f16);
        assert!(without.sentence().starts_with("Products in f32 (auto)"));
        assert!(
            !PrecisionChoice::of(Precision::F32, Some(MatrixUnits), "GPU")
                .unwrap()
                .f16
        );
        let refused = PrecisionChoice::of(Precision::F16, None, "llvmpipe").unwrap_err();
        assert!(refused.contains("llvmpipe offers no f16"), "{refused}");
        assert_eq!("auto".parse::<Precision>(), Ok(Precision::Auto));
        assert!("bf16".parse::<Precision>().is_err());
    }
}
