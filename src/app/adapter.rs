//! The GPU as the browser describes it (GPUAdapterInfo: vendor, architecture, description),
//! read through JavaScript because wgpu's web backend does not pass it on.

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

fn get(target: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(target, &JsValue::from_str(key))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// "nvidia hopper (NVIDIA H100 …)", or None where the browser says nothing.
pub async fn describe() -> Option<String> {
    // The page's navigator or the worker's, whichever runs this.
    let navigator = get(&js_sys::global(), "navigator")?;
    let gpu = get(&navigator, "gpu")?;
    let request: Function = get(&gpu, "requestAdapter")?.dyn_into().ok()?;
    let promise: Promise = request.call0(&gpu).ok()?.dyn_into().ok()?;
    let adapter = JsFuture::from(promise).await.ok()?;
    let info = get(&adapter, "info")?;
    let field = |key| get(&info, key)?.as_string().filter(|s| !s.is_empty());
    let named: Vec<String> = ["vendor", "architecture"]
        .into_iter()
        .filter_map(field)
        .collect();
    if named.is_empty() {
        return None;
    }
    let mut text = named.join(" ");
    if let Some(d) = field("description") {
        text += &format!(" ({d})");
    }
    Some(text)
}
