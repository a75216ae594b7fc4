//! What the kernels are chosen from, decided when a device opens and held by the `Gpu`, instead
//! of at compile time or from one GPU's figures: the compiler the kernels go through (Tint in
//! Chrome and naga natively and in Firefox make different code of the same kernel, and what
//! runs fast differs with them), whether it is the browser's WebGPU, whether the adapter emulates a GPU on the CPU, the workgroup memory the device
//! allows, and how many large tiles the GPU runs at once, which no adapter says: measured on the
//! spot (src/tune/), or unknown, and then nothing is balanced for it. Tests build any
//! `Tuning` natively and run the kernels under it.

use super::F16Products;

/// The WGSL compiler a device's kernels go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiler {
    /// wgpu's naga (to SPIR-V, MSL or HLSL): natively, and in Firefox, whose WebGPU is wgpu.
    Naga,
    /// Dawn's Tint: Chrome, Edge and the other Chromium browsers.
    Tint,
}

/// The choices that depend on the device and its compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    pub compiler: Compiler,
    /// Whether the device is the browser's WebGPU: each submission then crosses to the
    /// browser's GPU process, which decides how work is cut into submissions (batch.rs).
    pub in_browser: bool,
    /// Whether the adapter emulates a GPU on the CPU (lavapipe, SwiftShader): its kernels then
    /// use no workgroup memory and no barriers, which cost more than they save there.
    pub emulated: bool,
    /// The workgroup memory a kernel may declare (maxComputeWorkgroupStorageSize), in bytes.
    pub workgroup_bytes: u32,
    /// The large-tile product's workgroups the GPU runs at once, measured
    /// (`calibrate::tiles_at_once`); None where it was not, and then no product splits K only
    /// to balance its rounds.
    pub tiles_at_once: Option<usize>,
    /// The rows the tiled attention kernels stage per block, where not the default (tests run
    /// the other blocks so). Not measured: timed on H100s and H200s the blocks that fit ran
    /// within the noise of each other, and a choice by timing cost 1.4-3.7 s and a step up
    /// to 2.7 % (docs/log/kernels.md, "The attention's block, measured and dropped").
    pub attention_block: Option<usize>,
    /// The kernel products multiply on with their operands rounded to f16
    /// (`Gpu::set_precision`): the matrix units, their sums in f32 (shaders/matmul_coop.wgsl
    /// natively, matmul_subgroup_matrix.wgsl in Chrome), or the f16 arithmetic
    /// (matmul_f16_alu.wgsl). None, f32 products, until a run asks for f16.
    pub f16_products: Option<F16Products>,
}

impl Tuning {
    /// The tuning of a device this build opens with `limits` on the adapter `info` describes:
    /// in WebAssembly the browser's, whose compiler its name gives (Firefox's wgpu compiles
    /// with naga, every other browser that offers WebGPU with Tint), natively naga; the GPU's
    /// size not yet measured.
    pub fn of(info: &wgpu::AdapterInfo, limits: &wgpu::Limits) -> Tuning {
        let in_browser = cfg!(target_arch = "wasm32");
        Tuning {
            compiler: match in_browser && !browser_is_firefox() {
                true => Compiler::Tint,
                false => Compiler::Naga,
            },
            in_browser,
            emulated: info.device_type == wgpu::DeviceType::Cpu
                || info.name.to_lowercase().contains("swiftshader"),
            workgroup_bytes: limits.max_compute_workgroup_storage_size,
            tiles_at_once: None,
            attention_block: None,
            f16_products: None,
        }
    }

    /// This tuning with another compiler's kernel variants: tests run Chrome's natively so.
    pub fn with_compiler(self, compiler: Compiler) -> Tuning {
        Tuning { compiler, ..self }
    }
}

/// Whether this WebAssembly runs in Firefox, from the user agent of the page or worker.
#[cfg(target_arch = "wasm32")]
fn browser_is_firefox() -> bool {
    let navigator = js_sys::Reflect::get(&js_sys::global(), &"navigator".into());
    let agent = navigator.and_then(|n| js_sys::Reflect::get(&n, &"userAgent".into()));
    agent
        .ok()
        .and_then(|a| a.as_string())
        .is_some_and(|a| a.contains("Firefox/"))
}

#[cfg(not(target_arch = "wasm32"))]
fn browser_is_firefox() -> bool {
    false
}
