//! The f16 matrix units an adapter offers for the products (`MatrixUnits`), in the dialect of
//! its API, or the first of the kernels' needs it lacks (`Lacking`), in a sentence that names
//! what would help in the browser the page runs in.

use serde::{Deserialize, Serialize};
use std::fmt;

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

/// The environment variable that turns the matrix units off natively (`Lacking::TurnedOff`).
pub const MATRIX_UNITS_VAR: &str = "WEBGRAD_MATRIX_UNITS";

/// The subgroup width the kernels are written for.
#[cfg(not(target_arch = "wasm32"))]
const SUBGROUP_WIDTH: u32 = 32;

impl MatrixUnits {
    /// The wgpu features a device must be opened with for the cooperative matrices' kernel.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn features() -> wgpu::Features {
        wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
            | wgpu::Features::SHADER_F16
            | wgpu::Features::SUBGROUP
    }

    /// The cooperative matrices `adapter` offers for the kernel, or the first of its needs it
    /// lacks: the features, the 16 × 16 × 16 f16 → f32 configuration among its cooperative
    /// matrices, and subgroups always 32 wide.
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn of(adapter: &wgpu::Adapter) -> Result<MatrixUnits, Lacking> {
        use wgpu::CooperativeScalarType::{F16, F32};
        use wgpu::Features as F;
        let has = |f| adapter.features().contains(f);
        let sixteens = || {
            adapter.cooperative_matrix_properties().iter().any(|c| {
                (c.m_size, c.n_size, c.k_size) == (16, 16, 16)
                    && c.ab_type == F16
                    && c.cr_type == F32
            })
        };
        let info = adapter.get_info();
        let width = (info.subgroup_min_size, info.subgroup_max_size);
        match () {
            _ if !has(F::EXPERIMENTAL_COOPERATIVE_MATRIX) => Err(Lacking::Matrices(None)),
            _ if !has(F::SHADER_F16) => Err(Lacking::ShaderF16(None)),
            _ if !has(F::SUBGROUP) => Err(Lacking::Subgroups),
            _ if !sixteens() => Err(Lacking::Configuration),
            _ if width != (SUBGROUP_WIDTH, SUBGROUP_WIDTH) => Err(Lacking::SubgroupWidth),
            _ => Ok(MatrixUnits::Cooperative),
        }
    }

    /// The include that gives the attention kernels (attention_coop_common.wgsl) their tiles
    /// and matrices in this dialect.
    pub(crate) fn attention_units(self) -> &'static str {
        match self {
            MatrixUnits::Cooperative => "attention_units_coop",
            MatrixUnits::SubgroupMatrix => "attention_units_chrome",
        }
    }

    /// The include that stores the attention kernels' f32 results in this dialect (their f16
    /// gradients are stored alike in both: attention_results_f16.wgsl).
    pub(crate) fn attention_results(self) -> &'static str {
        match self {
            MatrixUnits::Cooperative => "attention_results_coop",
            MatrixUnits::SubgroupMatrix => "attention_results_chrome",
        }
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

/// The browser a page runs in, for the sentences to name the flags that would help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Browser {
    /// Chrome or another Chromium, on an NVIDIA GPU or not.
    Chrome {
        nvidia: bool,
    },
    Other,
}

/// Why an adapter offers no f16 matrix units to webgrad: the first of the kernel's needs it
/// lacks, in the order they are checked. `None` for the browser: natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lacking {
    /// No matrices at all: natively wgpu's cooperative matrices, in a page Chrome's subgroup
    /// matrices.
    Matrices(Option<Browser>),
    ShaderF16(Option<Browser>),
    Subgroups,
    /// Matrices, but none of 16 × 16 × 16 f16 with f32 sums.
    Configuration,
    /// Subgroups that may be narrower or wider than 32.
    SubgroupWidth,
    /// WGSL without the `subgroup_id` builtin (language feature `subgroup_id`), which the
    /// kernel in Chrome's dialect needs: Chrome wants the matrices' offsets subgroup-uniform.
    SubgroupId,
    /// WGSL without `buffer_view` (a language feature since Chrome 154), through which the
    /// kernel in Chrome's dialect stages its tiles as vec4s and reads them as halves.
    BufferView,
    /// The browser refused a device with them.
    Refused,
    /// `WEBGRAD_MATRIX_UNITS=off` (natively): a GPU with them run as one without, to measure
    /// and test the f16 arithmetic on it.
    TurnedOff,
}

impl fmt::Display for Lacking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNSAFE: &str = "--enable-unsafe-webgpu";
        match self {
            Lacking::Matrices(None) => {
                f.write_str("its driver offers wgpu no cooperative matrices")
            }
            Lacking::Matrices(Some(Browser::Chrome { .. })) => write!(
                f,
                "it offers no subgroup matrices here (Chrome offers them only when started \
                 with {UNSAFE}, on GPUs with matrix units)"
            ),
            Lacking::Matrices(Some(Browser::Other)) => write!(
                f,
                "this browser offers no subgroup matrices (Chrome does when started with \
                 {UNSAFE}, on GPUs with matrix units)"
            ),
            Lacking::ShaderF16(Some(Browser::Chrome { nvidia: true })) => f.write_str(
                "on NVIDIA under Linux, Chrome offers shader-f16 only when started with \
                 --enable-dawn-features=vulkan_enable_f16_on_nvidia",
            ),
            Lacking::ShaderF16(_) => f.write_str("it offers no shader-f16"),
            Lacking::Subgroups => f.write_str("it offers no subgroups"),
            Lacking::Configuration => {
                f.write_str("its matrices include none of 16×16×16 f16 with f32 sums")
            }
            Lacking::SubgroupWidth => f.write_str("its subgroups are not always 32 wide"),
            Lacking::SubgroupId => f.write_str(
                "this browser's WGSL has no subgroup_id builtin, which the kernel needs",
            ),
            Lacking::BufferView => f.write_str(
                "this browser's WGSL has no buffer_view, which the kernel needs (Chrome has it \
                 from version 154)",
            ),
            Lacking::Refused => f.write_str("the browser refused a device with them"),
            Lacking::TurnedOff => write!(f, "{MATRIX_UNITS_VAR}=off turned them off"),
        }
    }
}

/// Asserts that `text` (a kernel expanded, `what`) is in Chrome's dialect only: its three
/// `enable` directives first and no others, Chrome's multiply-adds, none of the native
/// dialect's cooperative matrices. (Native tests only: the browser's build has no caller.)
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn assert_in_chromes_dialect(text: &str, what: &str) {
    let enables = "enable f16;\nenable subgroups;\nenable chromium_experimental_subgroup_matrix;\n";
    assert!(text.starts_with(enables), "{what}: {}", &text[..200]);
    let directives = text.lines().filter(|l| l.starts_with("enable ")).count();
    assert_eq!(directives, 3, "{what}");
    assert!(text.contains("subgroupMatrixMultiplyAccumulate"), "{what}");
    assert!(
        !text.contains("coop_mat") && !text.contains("coopLoad"),
        "{what}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each browser is told what would help in it: Chrome its flags (the Dawn toggle only on
    /// NVIDIA), another browser that Chrome has them.
    #[test]
    fn the_reason_names_the_flag_of_the_browser_it_runs_in() {
        let chrome = Some(Browser::Chrome { nvidia: false });
        let nvidia = Some(Browser::Chrome { nvidia: true });
        let other = Some(Browser::Other);
        let says = |l: Lacking| l.to_string();
        assert!(says(Lacking::Matrices(chrome)).contains("Chrome offers them only when started"));
        assert!(says(Lacking::Matrices(other)).starts_with("this browser offers no subgroup"));
        assert!(says(Lacking::ShaderF16(nvidia)).contains("vulkan_enable_f16_on_nvidia"));
        assert_eq!(says(Lacking::ShaderF16(chrome)), "it offers no shader-f16");
        assert!(!says(Lacking::Matrices(None)).contains("--enable"));
        assert!(says(Lacking::BufferView).contains("Chrome has it from version 154"));
    }
}
