//! Chrome's subgroup matrices for the f16 products (`MatrixUnits::SubgroupMatrix`): wgpu's
//! WebGPU backend passes a WGSL kernel through to the browser unchanged, but asks the adapter
//! only for the features it knows, so our own glue (web/subgroup_matrix.js) adds `shader-f16`,
//! `subgroups` and `chromium-experimental-subgroup-matrix` to wgpu's device request where the
//! adapter offers what the kernel needs, and otherwise names the first need it lacks. Chrome
//! offers them only to pages it runs with `--enable-unsafe-webgpu` (and, on NVIDIA under Linux,
//! shader-f16 only with `--enable-dawn-features=vulkan_enable_f16_on_nvidia`).

use super::matrix_units::{Browser, Lacking};
use super::MatrixUnits;
use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(module = "/web/subgroup_matrix.js")]
extern "C" {
    fn ask_for_matrix_units();
    fn matrix_units_lacking() -> String;
    fn adapter_vendor() -> String;
    fn adapter_described() -> String;
    fn in_chromium() -> bool;
}

/// Makes the next device request ask for subgroup matrices where the adapter offers them.
pub(crate) fn ask() {
    ask_for_matrix_units();
}

/// The matrix units the device just opened was granted, or what the adapter lacked for them.
pub(crate) fn granted() -> Result<MatrixUnits, Lacking> {
    let browser = match in_chromium() {
        true => Browser::Chrome {
            nvidia: adapter_vendor().eq_ignore_ascii_case("nvidia"),
        },
        false => Browser::Other,
    };
    match matrix_units_lacking().as_str() {
        "" => Ok(MatrixUnits::SubgroupMatrix),
        "shader-f16" => Err(Lacking::ShaderF16(Some(browser))),
        "subgroups" => Err(Lacking::Subgroups),
        "configuration" => Err(Lacking::Configuration),
        "subgroup-width" => Err(Lacking::SubgroupWidth),
        "subgroup-id" => Err(Lacking::SubgroupId),
        "buffer-view" => Err(Lacking::BufferView),
        "refused" => Err(Lacking::Refused),
        _ => Err(Lacking::Matrices(Some(browser))),
    }
}

/// The adapter's vendor and architecture as the browser says them ("nvidia hopper"), or "".
pub(crate) fn described() -> String {
    adapter_described()
}
