//! The page's side of the training worker: starts it on the page's own WebAssembly module,
//! posts the page's requests to it and hands each of its reports to `present`.

use super::protocol::{Envelope, Request};
use super::{dom, present, show_error};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker, WorkerOptions, WorkerType};

/// The worker's start script (web/worker.js, copied beside the page by Trunk).
const SCRIPT: &str = "worker.js";

thread_local! {
    static WORKER: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

/// Starts the training worker, telling it where the module is: the URLs of the script and the
/// WebAssembly that Trunk's build preloads for the page.
pub fn start() -> Result<(), String> {
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
    let worker = Worker::new_with_options(SCRIPT, &options).map_err(dom::js_error)?;
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(|e: MessageEvent| {
        match serde_wasm_bindgen::from_value::<Envelope>(e.data()) {
            Ok(envelope) => present::apply(envelope),
            Err(why) => {
                // What it said is lost, so the page cannot know what the run is doing: pause it.
                super::set_running(false);
                present::paused();
                show_error(Some(format!(
                    "The training worker said something the page cannot read: {why}"
                )));
            }
        }
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(|_| {
        present::paused();
        show_error(Some(
            "The training worker stopped with an error (the browser's console says which). Reload the page to train again.".into(),
        ))
    });
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
