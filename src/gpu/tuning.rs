//! Which kernel variants a device gets, decided when it opens and held by the `Gpu`, instead of
//! at compile time: the browser's WGSL compiler (Tint in Chrome) and wgpu's native one (naga)
//! make different code of the same kernel, and what runs fast differs with them (measured in
//! Chrome and natively on an H100 and an H200, docs/BENCHMARKS.md). A test can give a device
//! the browser's tuning natively, to run the browser's kernel variants through the op checks.

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
}

impl Tuning {
    /// The tuning of a device this build opens: the browser's in WebAssembly, else native.
    pub fn of_this_build() -> Tuning {
        Tuning {
            compiler: match cfg!(target_arch = "wasm32") {
                true => Compiler::Browser,
                false => Compiler::Native,
            },
        }
    }

    /// The browser's tuning, for tests that run its kernel variants natively.
    pub fn browser() -> Tuning {
        Tuning {
            compiler: Compiler::Browser,
        }
    }

    pub fn in_browser(&self) -> bool {
        self.compiler == Compiler::Browser
    }
}
