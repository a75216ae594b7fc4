//! The page's bench mode, `?bench=1[&only=NAME,NAME][&quick=0][&profile=1][&precision=f16]`:
//! instead of the playground, runs webgrad::bench's workloads in this browser and prints each
//! line in the page and in `window.webgrad.bench()` ({done, lines, error}); `profile=1` adds
//! each workload's GPU time per kernel; `precision` is f32 (the default), f16 or auto, as
//! `webgrad bench --precision` (f16 workloads named `_f16`). By default it runs the workloads
//! that an emulated adapter finishes in seconds: matmul_1024 and mlp_mnist_b128.

use super::{dom, tuning_store};
use crate::bench::{BenchOptions, Products};
use crate::gpu::Precision;
use crate::tune;
use crate::Gpu;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;

/// What `window.webgrad.bench()` returns.
#[derive(Serialize, Clone, Default)]
pub struct BenchState {
    pub done: bool,
    pub lines: Vec<String>,
    pub error: Option<String>,
}

thread_local! {
    static STATE: RefCell<BenchState> = RefCell::new(BenchState::default());
}

/// The bench state so far.
pub fn state() -> BenchState {
    STATE.with(|s| s.borrow().clone())
}

/// The options of `?bench=…`, or None when the page is not in bench mode.
pub fn options(search: &str) -> Option<BenchOptions> {
    let params = web_sys::UrlSearchParams::new_with_str(search).ok()?;
    let mode = params.get("bench")?;
    if mode == "0" {
        return None;
    }
    let only = params
        .get("only")
        .unwrap_or_else(|| "matmul_1024,mlp_mnist_b128".into());
    Some(BenchOptions {
        quick: params.get("quick").as_deref() != Some("0"),
        only: only
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        suffix: String::new(),
        profile: params.get("profile").as_deref() == Some("1"),
        // `&autotune=off`, as WEBGRAD_AUTOTUNE=off natively: the planner's variants.
        products: match params.get("autotune").as_deref() {
            Some("off") => Products::Planned,
            _ => Products::Timed,
        },
    })
}

/// The precision `?precision=` asks for (f32 without it), or the sentence naming a bad value.
pub fn precision(search: &str) -> Result<Precision, String> {
    let params = web_sys::UrlSearchParams::new_with_str(search).ok();
    match params.and_then(|p| p.get("precision")) {
        Some(asked) => asked.parse(),
        None => Ok(Precision::F32),
    }
}

/// Runs the benchmark on `gpu` in `precision` (or says why it cannot), showing lines as they
/// come.
pub async fn run(
    gpu: Result<Rc<Gpu>, String>,
    mut options: BenchOptions,
    precision: Result<Precision, String>,
) {
    dom::set_hidden("task-bar", true);
    dom::set_hidden("playground", true);
    dom::set_hidden("bench", false);
    let unknown = crate::bench::unknown(&options.only);
    let result = match gpu {
        // A name that matches nothing would run nothing and say "Done.".
        _ if unknown.is_some() => Err(format!(
            "only={} names no workload; the workloads are {}",
            unknown.unwrap_or_default(),
            crate::bench::names().join(", ")
        )),
        Ok(gpu) => {
            // Tuned as the playground's worker tunes, from and into the same storage.
            let (tuned, new) = tune::tune_kept(&gpu, &tuning_store::stored()).await;
            if let Some(text) = new {
                tuning_store::store(&text);
            }
            let tuned = tuned.sentence().unwrap_or_else(|| "nothing to tune".into());
            dom::set_text("adapter", &format!("GPU adapter: {}", gpu.adapter_name()));
            let choice = precision.and_then(|p| {
                crate::bench::set_precision(&gpu, p, &mut options).map_err(|e| e.sentence())
            });
            async {
                show(format!(
                    "device: {}; {tuned} {}",
                    gpu.adapter_name(),
                    choice?.sentence()
                ));
                crate::bench::run(&gpu, &options, show)
                    .await
                    .map_err(|e| e.to_string())
            }
            .await
        }
        Err(e) => Err(format!(
            "The benchmark needs WebGPU, and this browser offers no adapter ({e})."
        )),
    };
    let status = match &result {
        Ok(()) => "Done.".to_string(),
        Err(e) => format!("The benchmark stopped: {e}"),
    };
    dom::set_text("bench-status", &status);
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.done = true;
        s.error = result.err();
    });
}

/// Appends one line to the page and to the state.
fn show(line: String) {
    let text = STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.lines.push(line);
        s.lines.join("\n")
    });
    dom::set_text("bench-lines", &text);
}
