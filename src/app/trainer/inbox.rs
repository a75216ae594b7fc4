//! The worker's side of the messages: the page's requests queued as they arrive, a wait that
//! wakes when one does, and reports posted back to the page.

use crate::app::protocol::{Envelope, Report, Request};
use js_sys::{Function, Promise};
use std::cell::RefCell;
use std::collections::VecDeque;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

#[derive(Default)]
struct Inbox {
    requests: VecDeque<Request>,
    /// The run of the latest Reset (or fine-tuning) received: work for an older run is stale.
    latest_run: u64,
    /// The latest Run request taken by the loop (reports carry it).
    ask: u64,
    /// Resolves the wait under way, if any.
    wake: Option<Function>,
}

thread_local! {
    static INBOX: RefCell<Inbox> = RefCell::new(Inbox::default());
}

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// Queues the page's requests as they arrive. One that cannot be read is queued as such, not
/// lost silently (it would be a mismatch between the page's and the worker's code).
pub fn listen() {
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(|e: MessageEvent| {
        let request = serde_wasm_bindgen::from_value::<Request>(e.data()).unwrap_or_else(|e| {
            Request::Unreadable(format!("The training worker could not read a request: {e}"))
        });
        INBOX.with(|i| {
            let mut inbox = i.borrow_mut();
            match &request {
                Request::Reset(plan) => inbox.latest_run = plan.run,
                Request::FineTune(ask) => inbox.latest_run = ask.run,
                _ => {}
            }
            inbox.requests.push_back(request);
            if let Some(wake) = inbox.wake.take() {
                let _ = wake.call0(&JsValue::NULL);
            }
        });
    });
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
}

/// The run of the latest Reset (or fine-tuning) the page asked for.
pub fn latest_run() -> u64 {
    INBOX.with(|i| i.borrow().latest_run)
}

/// The requests received so far, in order; of several pad drawings only the last (the pointer
/// moves faster than the model reads), and of several Resets only the last: each replaces the
/// run the ones before it would build, so building those only delays the one asked for last.
pub fn take() -> Vec<Request> {
    let mut requests: Vec<Request> = INBOX.with(|i| i.borrow_mut().requests.drain(..).collect());
    let last_pad = requests.iter().rposition(|r| matches!(r, Request::Pad(_)));
    let last_reset = requests
        .iter()
        .rposition(|r| matches!(r, Request::Reset(_)));
    let mut at = 0;
    requests.retain(|r| {
        at += 1;
        match r {
            Request::Pad(_) => Some(at - 1) == last_pad,
            Request::Reset(_) => Some(at - 1) == last_reset,
            _ => true,
        }
    });
    requests
}

/// Notes the latest Run request the loop took.
pub fn took_ask(ask: u64) {
    INBOX.with(|i| i.borrow_mut().ask = ask);
}

/// Waits until a request arrives, or `most_ms` have passed.
pub async fn wait(most_ms: i32) {
    if INBOX.with(|i| !i.borrow().requests.is_empty()) {
        return;
    }
    let promise = Promise::new(&mut |resolve, _| {
        let _ = scope().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, most_ms);
        INBOX.with(|i| i.borrow_mut().wake = Some(resolve));
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    INBOX.with(|i| i.borrow_mut().wake = None);
}

/// Posts a report of run `run` to the page.
pub fn post(run: u64, report: Report) {
    let ask = INBOX.with(|i| i.borrow().ask);
    let envelope = Envelope { run, ask, report };
    match serde_wasm_bindgen::to_value(&envelope) {
        Ok(message) => {
            let _ = scope().post_message(&message);
        }
        Err(e) => web_sys::console::error_1(&format!("a report could not be sent: {e}").into()),
    }
}
