//! What the worker has instead of a window: its clock, timers, fetch and the GPU.

use super::inbox;
use crate::app::protocol::Report;
use crate::app::{adapter, tuning_store};
use crate::gpu::LimitsAsked;
use crate::tune::{self, Tuned};
use crate::{Device, Gpu};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::WorkerGlobalScope;

/// `gpu` tuned from what was measured before, else measured now; the page is sent what is new.
async fn tuned(gpu: &Rc<Gpu>) -> Tuned {
    let kept = TUNED.with(|t| t.borrow_mut().take()).unwrap_or_else(|| {
        let search = scope().location().search();
        let url_query = web_sys::UrlSearchParams::new_with_str(&search).ok();
        let kept = url_query.and_then(|q| q.get(tuning_store::PARAM));
        kept.unwrap_or_default()
    });
    let (tuned, new) = tune::tune_kept(gpu, &kept).await;
    if let Some(text) = &new {
        inbox::post(0, Report::Tuned(text.clone()));
    }
    TUNED.with(|t| *t.borrow_mut() = Some(new.unwrap_or(kept)));
    tuned
}

/// The product shapes a GPU `device` planned since the last call timed as each of their variants
/// (`tune::tune_products`): the page is sent what is new, and the adapter line with what was
/// timed added to it.
pub async fn time_products(device: &Device) {
    let Device::Gpu(gpu) = device else {
        return;
    };
    if !gpu.product_variants().any_noted() && !gpu.attention_paths().any_noted() {
        return;
    }
    let kept = TUNED.with(|t| t.borrow().clone()).unwrap_or_default();
    let (tuned, new) = tune::tune_products_kept(gpu, &kept).await;
    if let Some(text) = new {
        inbox::post(0, Report::Tuned(text.clone()));
        TUNED.with(|t| *t.borrow_mut() = Some(text));
    }
    let sentence = match tuned {
        Ok(tuned) => tuned.sentence(),
        Err(e) => Some(format!(
            "its product and attention shapes were not timed ({})",
            e.sentence()
        )),
    };
    if let Some(sentence) = sentence {
        let line = ADAPTER_LINE.with(|l| format!("{}; {sentence}", l.borrow()));
        inbox::post(0, Report::Device(line));
    }
}

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

thread_local! {
    /// What was measured on GPUs (src/tune/): first what the page kept from earlier visits
    /// (this worker's URL), then what this worker measured, so that a device opened again
    /// after a loss measures nothing.
    static TUNED: RefCell<Option<String>> = const { RefCell::new(None) };
    /// The adapter line of the device open, which what is timed later adds to.
    static ADAPTER_LINE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// The GPU when the browser offers one, else the CPU backend; with a sentence saying which,
/// and what was tuned for it.
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
            let tuned = match tuned(&gpu).await.sentence() {
                Some(sentence) => format!("; {sentence}"),
                None => String::new(),
            };
            let line = format!("GPU adapter: {name}{limits}{tuned}");
            ADAPTER_LINE.with(|l| *l.borrow_mut() = line.clone());
            (Device::Gpu(gpu), line)
        }
        Err(_) => (
            Device::Cpu,
            "This browser offers no WebGPU adapter, so training runs on the CPU backend."
                .to_string(),
        ),
    }
}
