//! Chrome's subgroup matrices for the f16 products (`MatrixUnits::SubgroupMatrix`): wgpu's
//! WebGPU backend passes a WGSL kernel through to the browser unchanged, but asks the adapter
//! only for the features it knows, so our own glue (web/subgroup_matrix.js) adds `shader-f16`,
//! `subgroups` and `chromium-experimental-subgroup-matrix` to wgpu's device request where the
//! adapter offers what the kernel needs. Chrome offers them only to pages it runs with
//! `--enable-unsafe-webgpu` (and, on NVIDIA under Linux, with
//! `--enable-dawn-features=vulkan_enable_f16_on_nvidia`); elsewhere nothing is asked for.

use super::MatrixUnits;
use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(module = "/web/subgroup_matrix.js")]
extern "C" {
    fn ask_for_matrix_units();
    fn matrix_units_granted() -> bool;
}

/// Makes the next device request ask for subgroup matrices where the adapter offers them.
pub(crate) fn ask() {
    ask_for_matrix_units();
}

/// The matrix units the device just opened was granted, if any.
pub(crate) fn granted() -> Option<MatrixUnits> {
    matrix_units_granted().then_some(MatrixUnits::SubgroupMatrix)
}
