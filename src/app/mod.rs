//! The browser page (wasm32 only). For now: open the GPU, show the adapter, and run a small
//! self-check of the kernels against the CPU reference.

use crate::{Device, Gpu, Result, Tensor};
use wasm_bindgen::prelude::*;

/// Runs when the module loads; does nothing on pages without the playground (e.g. tests).
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if document.get_element_by_id("adapter").is_none() {
        return;
    }
    wasm_bindgen_futures::spawn_local(async move {
        let text = match Gpu::new().await {
            Ok(gpu) => {
                let check = match self_check(Device::Gpu(gpu.clone())).await {
                    Ok(err) => format!("kernel self-check passed: a 67×45·45×71 matmul matches the CPU reference (max error {err:.1e})"),
                    Err(e) => format!("kernel self-check failed: {e}"),
                };
                (format!("GPU adapter: {}", gpu.adapter_name()), check)
            }
            Err(e) => (
                format!("No WebGPU here: {e}"),
                "Training will use the CPU backend.".to_string(),
            ),
        };
        set_text(&document, "adapter", &text.0);
        set_text(&document, "self-check", &text.1);
    });
}

fn set_text(document: &web_sys::Document, id: &str, text: &str) {
    if let Some(el) = document.get_element_by_id(id) {
        el.set_text_content(Some(text));
    }
}

/// The largest difference between a GPU matmul and the CPU reference.
async fn self_check(gpu: Device) -> Result<f64> {
    let a: Vec<f32> = (0..67 * 45)
        .map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5)
        .collect();
    let b: Vec<f32> = (0..45 * 71)
        .map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5)
        .collect();
    let on = |d: &Device| -> Result<Tensor> {
        Tensor::from_vec(a.clone(), &[67, 45], d)?.matmul(&Tensor::from_vec(
            b.clone(),
            &[45, 71],
            d,
        )?)
    };
    let want = on(&Device::Cpu)?.to_vec_f64().await?;
    let got = on(&gpu)?.to_vec_f64().await?;
    Ok(got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max))
}
