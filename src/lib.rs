//! webgrad: tensors and reverse-mode autograd whose math runs as WGSL compute shaders through
//! wgpu (WebGPU in the browser, Vulkan/Metal/DX12 natively), with an f64 CPU reference backend.

// The library's own tests that run in the browser (`wasm-pack test --headless --chrome`).
#[cfg(all(test, target_arch = "wasm32"))]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);

pub mod autograd;
pub mod bench;
pub mod clock;
pub mod data;
pub mod error;
pub mod gpu;
pub mod nn;
pub mod ops;
pub mod optim;
mod recompute;
mod setting;
pub mod tensor;
pub mod train;
pub mod tune;

pub use autograd::{no_grad, Gradients};
pub use error::{Error, Result};
pub use gpu::{Counters, Gpu};
pub use tensor::{DType, Device, Tensor};

#[cfg(target_arch = "wasm32")]
mod app;
