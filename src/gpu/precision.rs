//! The precision products run in, asked for by the user (`Precision`) and allowed by the adapter
//! (`MatrixUnits`): f32 everywhere, or mixed precision, where a product rounds its operands to
//! f16 as it stages them and multiplies them on the GPU's matrix units, adding in f32 (set on a
//! device by `Gpu::set_precision`, below). Tensors, master weights and optimizer state stay f32
//! either way.

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

/// What the adapter offers for f16 products: matrices of 16 × 16 × 16 with f16 operands and f32
/// sums, on subgroups always 32 wide (the kernels give each of a workgroup's 8 subgroups its own
/// block of C), in one of two dialects of WGSL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatrixUnits {
    /// Natively, wgpu's experimental cooperative matrices (Vulkan's VK_KHR_cooperative_matrix:
    /// NVIDIA's tensor cores), shaders/matmul_coop.wgsl.
    Cooperative,
    /// In Chrome, its experimental subgroup matrices, shaders/matmul_subgroup_matrix.wgsl;
    /// asked for by our own glue (src/gpu/subgroup_matrix.rs), since wgpu's WebGPU backend
    /// does not.
    SubgroupMatrix,
}

/// The subgroup width the kernels are written for.
#[cfg(not(target_arch = "wasm32"))]
const SUBGROUP_WIDTH: u32 = 32;

impl MatrixUnits {
    /// The wgpu features a device must be opened with for the cooperative matrices' kernel.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn features() -> wgpu::Features {
        wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
            | wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP
    }

    /// Whether `adapter` offers cooperative matrices for the kernel: the features, the
    /// 16 × 16 × 16 f16 → f32 configuration among its cooperative matrices, and subgroups
    /// always 32 wide.
    #[cfg(not(target_arch = "wasm32"))]
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
        (sixteens && width == (SUBGROUP_WIDTH, SUBGROUP_WIDTH)).then_some(MatrixUnits::Cooperative)
    }

    /// The product kernel's source in this dialect.
    pub(crate) fn kernel_source(self) -> &'static str {
        match self {
            MatrixUnits::Cooperative => include_str!("../../shaders/matmul_coop.wgsl"),
            MatrixUnits::SubgroupMatrix => {
                include_str!("../../shaders/matmul_subgroup_matrix.wgsl")
            }
        }
    }
}

/// Where a page can get them: Chrome offers its subgroup matrices only to pages it runs with
/// `--enable-unsafe-webgpu` (on NVIDIA under Linux, shader-f16 also needs a Dawn toggle).
const WHERE_TO_GET_THEM: &str = match cfg!(target_arch = "wasm32") {
    true => " (Chrome offers them only when started with --enable-unsafe-webgpu)",
    false => "",
};

/// What a run asked for and what it got, with the reason, for the CLI and the page to say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrecisionChoice {
    pub asked: Precision,
    /// The matrix units products run on with f16 operands; None: f32.
    pub units: Option<MatrixUnits>,
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
        let why = match (asked, units.is_some()) {
            (Precision::F32, _) => "f32 was asked for".to_string(),
            (Precision::F16 | Precision::Auto, true) => {
                format!("{adapter} multiplies f16 on matrix units, adding in f32")
            }
            (Precision::F16, false) => {
                return Err(format!(
                    "f16 was asked for, but {adapter} offers no f16 matrix units to webgrad \
                     (16×16×16 matrices with f32 sums on subgroups of 32){WHERE_TO_GET_THEM}; \
                     use f32 or auto"
                ))
            }
            (Precision::Auto, false) => {
                format!("{adapter} offers no f16 matrix units to webgrad{WHERE_TO_GET_THEM}")
            }
        };
        Ok(PrecisionChoice {
            asked,
            units: units.filter(|_| asked != Precision::F32),
            why,
        })
    }

    /// True when products run with f16 operands on matrix units.
    pub fn f16(&self) -> bool {
        self.units.is_some()
    }

    /// One sentence: "Products in f16 (auto): …".
    pub fn sentence(&self) -> String {
        let got = if self.f16() { "f16" } else { "f32" };
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
            f16_products: choice.units,
            ..self.tuning.get()
        });
        *self.precision.borrow_mut() = Some(choice.clone());
        Ok(choice)
    }

    /// What the latest `set_precision` chose and why; None before one.
    pub fn precision(&self) -> Option<PrecisionChoice> {
        self.precision.borrow().clone()
    }

    /// The f16 matrix units this device offers, if any.
    pub fn matrix_units(&self) -> Option<MatrixUnits> {
        self.matrix_units
    }
}

/// Opens the device with `features`, and with the f16 matrix units where the adapter offers
/// them (f32 runs too: the device opens before a run asks for a precision): natively wgpu's
/// cooperative matrices, in Chrome its subgroup matrices, asked for by our own glue.
pub(super) async fn open_device(
    adapter: &wgpu::Adapter,
    limits: &wgpu::Limits,
    features: wgpu::Features,
) -> crate::Result<(wgpu::Device, wgpu::Queue, Option<MatrixUnits>)> {
    #[cfg(not(target_arch = "wasm32"))]
    let units = MatrixUnits::of(adapter);
    #[cfg(not(target_arch = "wasm32"))]
    let features = match units {
        Some(_) => features | MatrixUnits::features(),
        None => features,
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
                Some(_) => unsafe { wgpu::ExperimentalFeatures::enabled() },
                None => wgpu::ExperimentalFeatures::disabled(),
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

    #[test]
    fn auto_takes_f16_only_where_offered_and_f16_is_refused_where_not() {
        let units = Some(MatrixUnits::SubgroupMatrix);
        let with = PrecisionChoice::of(Precision::Auto, units, "GPU").unwrap();
        let without = PrecisionChoice::of(Precision::Auto, None, "GPU").unwrap();
        assert_eq!((with.units, without.units), (units, None));
        assert!(without.sentence().starts_with("Products in f32 (auto)"));
        assert!(!PrecisionChoice::of(Precision::F32, units, "GPU")
            .unwrap()
            .f16());
        let refused = PrecisionChoice::of(Precision::F16, None, "llvmpipe").unwrap_err();
        assert!(refused.contains("llvmpipe offers no f16"), "{refused}");
        assert_eq!("auto".parse::<Precision>(), Ok(Precision::Auto));
        assert!("bf16".parse::<Precision>().is_err());
    }
}
