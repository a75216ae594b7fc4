//! What the kernels are chosen from, decided when a device opens and held by the `Gpu`, instead
//! of at compile time or from one GPU's figures: the compiler the kernels go through (Tint in
//! Chrome and naga natively and in Firefox make different code of the same kernel, and what
//! runs fast differs with them), whether it is the browser's WebGPU, whether the adapter emulates a GPU on the CPU, the workgroup memory the device
//! allows, and how many large tiles the GPU runs at once, which no adapter says: measured on the
//! spot (src/tune/), or unknown, and then nothing is balanced for it; and the attention
//! kernels' block, measured there too. Tests build any
//! `Tuning` natively and run the kernels under it.

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
    /// The rows the tiled attention kernels stage per block for heads of each of
    /// MEASURED_HEADS wide, the fastest of those that fit as measured on the spot (src/tune/);
    /// None where not measured (the default then).
    pub attention_blocks: [Option<usize>; 2],
}

/// The head widths whose attention block is measured: the playground's GPTs' (the small one's
/// 32, nanochar's and GPT-2's 64). The fastest block differs with the width: on an H200 a probe
/// of heads of 64 ran fastest in blocks of 64 while gpt_small's heads of 32 were slower in them.
pub const MEASURED_HEADS: [usize; 2] = [32, 64];

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
            attention_blocks: [None; 2],
        }
    }

    /// The measured attention block for heads `d` wide, if any.
    pub fn attention_block(&self, d: usize) -> Option<usize> {
        let at = MEASURED_HEADS.iter().position(|&h| h == d)?;
        self.attention_blocks[at]
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
