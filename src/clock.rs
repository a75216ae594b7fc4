//! Now, as a duration since an arbitrary start: `Instant` natively, `performance.now()` in the
//! browser (where `Instant` panics). The benchmark and the kernel profile time with it.

use std::time::Duration;

/// The time since an arbitrary, fixed start.
pub fn now() -> Duration {
    #[cfg(not(target_arch = "wasm32"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<std::time::Instant> = OnceLock::new();
        START.get_or_init(std::time::Instant::now).elapsed()
    }
    #[cfg(target_arch = "wasm32")]
    {
        use wasm_bindgen::JsCast;
        // The page's clock or the training worker's, whichever runs this.
        let ms = js_sys::Reflect::get(&js_sys::global(), &"performance".into())
            .ok()
            .and_then(|p| p.dyn_into::<web_sys::Performance>().ok())
            .map_or(0.0, |p| p.now());
        Duration::from_secs_f64(ms / 1e3)
    }
}
