//! What the kernels are chosen from, decided when a device opens and held by the `Gpu`, instead
//! of at compile time or from one GPU's figures: the compiler the kernels go through (Tint in
//! Chrome and naga natively make different code of the same kernel, and what runs fast differs
//! with them), whether the adapter emulates a GPU on the CPU, the workgroup memory the device
//! allows, and how many large tiles the GPU runs at once, which no adapter says: measured on the
//! spot (src/gpu/calibrate.rs), or unknown, and then nothing is balanced for it. Tests build any
//! `Tuning` natively and run the kernels under it.

/// The compiler a device's kernels go through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compiler {
    /// wgpu's naga, natively (to SPIR-V, MSL or HLSL).
    Native,
    /// The browser's own (Tint in Chrome).
    Browser,
}

/// The choices that depend on the device and its compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    pub compiler: Compiler,
    /// Whether the adapter emulates a GPU on the CPU (lavapipe, SwiftShader): its kernels then
    /// use no workgroup memory and no barriers, which cost more than they save there.
    pub emulated: bool,
    /// The workgroup memory a kernel may declare (maxComputeWorkgroupStorageSize), in bytes.
    pub workgroup_bytes: u32,
    /// The large-tile product's workgroups the GPU runs at once, measured
    /// (`calibrate::tiles_at_once`); None where it was not, and then no product splits K only
    /// to balance its rounds.
    pub tiles_at_once: Option<usize>,
}

impl Tuning {
    /// The tuning of a device this build opens with `limits` on the adapter `info` describes:
    /// the browser's compiler in WebAssembly, else native; the GPU's size not yet measured.
    pub fn of(info: &wgpu::AdapterInfo, limits: &wgpu::Limits) -> Tuning {
        Tuning {
            compiler: match cfg!(target_arch = "wasm32") {
                true => Compiler::Browser,
                false => Compiler::Native,
            },
            emulated: info.device_type == wgpu::DeviceType::Cpu
                || info.name.to_lowercase().contains("swiftshader"),
            workgroup_bytes: limits.max_compute_workgroup_storage_size,
            tiles_at_once: None,
        }
    }

    /// A real GPU of unknown size with the adapter limits most offer (32 KiB of workgroup
    /// memory) whose kernels go through `compiler`: the base of the planner's table tests.
    pub fn real(compiler: Compiler) -> Tuning {
        Tuning {
            compiler,
            emulated: false,
            workgroup_bytes: 32 << 10,
            tiles_at_once: None,
        }
    }

    /// This tuning with the browser's compiler: tests run its kernel variants natively so.
    pub fn in_browsers_compiler(self) -> Tuning {
        Tuning {
            compiler: Compiler::Browser,
            ..self
        }
    }

    pub fn in_browser(&self) -> bool {
        self.compiler == Compiler::Browser
    }
}
