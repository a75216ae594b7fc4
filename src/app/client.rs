//! The page's side of the training worker: starts it on the page's own WebAssembly module,
//! posts the page's requests to it and hands what it says to the handler the page gave.

use super::protocol::{Envelope, Request};
use super::tuning_store;
use super::{dom, show_error};
use crate::gpu::LimitsAsked;
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker, WorkerOptions, WorkerType};

/// The worker's start script (web/worker.js, copied beside the page by Trunk).
const SCRIPT: &str = "worker.js";

thread_local! {
    static WORKER: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

/// What the worker says, as the page's handler gets it.
pub enum Heard {
    Report(Envelope),
    /// A message the page cannot read, and why.
    Unreadable(String),
    /// The worker stopped with an error.
    Crashed,
}

/// Starts the training worker, telling it where the module is (the URLs of the script and the
/// WebAssembly that Trunk's build preloads for the page); `heard` gets what it says.
pub fn start(heard: fn(Heard)) -> Result<(), String> {
    let link = |selector: &str| {
        dom::document()
            .query_selector(selector)
            .ok()
            .flatten()
            .and_then(|l| l.get_attribute("href"))
    };
    let (Some(glue), Some(wasm)) = (
        link("link[rel=modulepreload]"),
        link("link[rel=preload][as=fetch]"),
    ) else {
        return Err("The page cannot find its own WebAssembly module, so training cannot start. Serve the page as Trunk builds it.".into());
    };
    let options = WorkerOptions::new();
    options.set_type(WorkerType::Module);
    // The worker opens the GPU device: it reads the limits the link asks for and what was
    // measured on this GPU before in its own URL.
    let mut query: Vec<String> = LimitsAsked::from_query(&dom::search())
        .to_query()
        .into_iter()
        .collect();
    let tuned = tuning_store::stored();
    if !tuned.is_empty() {
        let value = js_sys::encode_uri_component(&tuned);
        query.push(format!("{}={}", tuning_store::PARAM, String::from(value)));
    }
    let script = match query.is_empty() {
        true => SCRIPT.to_string(),
        false => format!("{SCRIPT}?{}", query.join("&")),
    };
    let worker = Worker::new_with_options(&script, &options).map_err(dom::js_error)?;
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        heard(match serde_wasm_bindgen::from_value::<Envelope>(e.data()) {
            Ok(envelope) => Heard::Report(envelope),
            Err(why) => Heard::Unreadable(why.to_string()),
        })
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| heard(Heard::Crashed));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    on_error.forget();
    let urls = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&urls, &"glue".into(), &glue.into());
    let _ = js_sys::Reflect::set(&urls, &"wasm".into(), &wasm.into());
    worker.post_message(&urls).map_err(dom::js_error)?;
    WORKER.with(|w| *w.borrow_mut() = Some(worker));
    Ok(())
}

/// Posts a request to the worker.
pub fn post(request: Request) {
    let message = match serde_wasm_bindgen::to_value(&request) {
        Ok(m) => m,
        Err(e) => return show_error(Some(format!("The page could not send a request: {e}"))),
    };
    WORKER.with(|w| {
        if let Some(worker) = w.borrow().as_ref() {
            if let Err(e) = worker.post_message(&message) {
                show_error(Some(format!(
                    "The page could not send a request: {}",
                    dom::js_error(e)
                )));
            }
        }
    });
}
