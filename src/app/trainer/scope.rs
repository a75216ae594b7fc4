//! What the worker has instead of a window: its clock, timers, fetch and the GPU.

use crate::app::adapter;
use crate::gpu::LimitsAsked;
use crate::{Device, Gpu};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::WorkerGlobalScope;

fn scope() -> WorkerGlobalScope {
    js_sys::global().unchecked_into()
}

pub fn now_ms() -> f64 {
    scope().performance().map_or(0.0, |p| p.now())
}

pub use crate::gpu::nudge::sleep;

/// Lets the events queued meanwhile (the page's requests) run, then goes on.
pub use crate::gpu::nudge::yield_now as yield_to_events;

/// Fetches one of the site's files.
pub async fn fetch(path: &str) -> Result<Vec<u8>, String> {
    let response: web_sys::Response = JsFuture::from(scope().fetch_with_str(path))
        .await
        .map_err(crate::app::dom::js_error)?
        .unchecked_into();
    if !response.ok() {
        return Err(format!(
            "could not load {path} (HTTP {})",
            response.status()
        ));
    }
    let buffer = JsFuture::from(response.array_buffer().map_err(crate::app::dom::js_error)?)
        .await
        .map_err(crate::app::dom::js_error)?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

/// The GPU when the browser offers one, else the CPU backend; with a sentence saying which.
pub async fn open_device() -> (Device, String) {
    // The page puts the limits its link asks for in this worker's URL.
    let asked = LimitsAsked::from_query(&scope().location().search());
    match Gpu::open(asked).await {
        Ok(gpu) => {
            let name = match adapter::describe().await {
                Some(described) => described,
                None => gpu.adapter_name(),
            };
            let limits = match asked {
                LimitsAsked::Guaranteed => ", with only the limits WebGPU guarantees",
                LimitsAsked::Adapter => "",
            };
            (Device::Gpu(gpu), format!("GPU adapter: {name}{limits}"))
        }
        Err(_) => (
            Device::Cpu,
            "This browser offers no WebGPU adapter, so training runs on the CPU backend."
                .to_string(),
        ),
    }
}
