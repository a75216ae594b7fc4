//! Waiting for the GPU in a browser. Chrome's GPU process looks for finished work when new
//! commands arrive and otherwise when it polls, about every 2 ms, so a wait for a short piece of
//! work takes about 2.5 ms however soon the work ends. While waiting, an empty submission every
//! NUDGE_EVERY_MS makes it look again. Measured in Chrome on an H100 (docs/BENCHMARKS.md): 25
//! small dispatches answered in 0.56 ms instead of 2.45. Only for the first NUDGE_FOR_MS at that
//! rate: longer work gains nothing from it there, and nudging keeps the CPU busy while it lasts.
//! After that, one nudge every SLOW_NUDGE_MS, between sleeps, while the wait lasts: Firefox looks
//! for finished work on its own only every 100 ms (its WebGPU parent's poll timer), so there a
//! step's readback waited up to 100 ms (docs/BENCHMARKS.md, Firefox beside Chromium). A long
//! wait is nudged at the fast rate again around when the last long wait ended (a training
//! step's waits last alike): from LEAD_MS before it for NUDGE_FOR_MS, so that its answer is
//! not left for the next slow nudge or poll (nested timers come 4 ms apart at best).

use futures_channel::oneshot::{Canceled, Receiver};
use js_sys::{Function, Promise};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::MessageChannel;

const NUDGE_EVERY_MS: f64 = 0.1;
const NUDGE_FOR_MS: f64 = 3.0;
const SLOW_NUDGE_MS: i32 = 2;
const LEAD_MS: f64 = 1.0;

fn now_ms() -> f64 {
    crate::clock::now().as_secs_f64() * 1e3
}

thread_local! {
    /// The channel each `yield_now` posts a message on, and the promises waiting for those
    /// messages, in the order they were posted: a port delivers its messages in order, and each
    /// message wakes the oldest, so that yields made at once by several tasks (a wait's nudges
    /// beside the trainer's loop) each wake once.
    static WAITING: RefCell<VecDeque<Function>> = const { RefCell::new(VecDeque::new()) };
    static CHANNEL: Option<MessageChannel> = channel();
    /// How long the last wait that outlasted NUDGE_FOR_MS took, in ms.
    static LAST_LONG_WAIT_MS: Cell<Option<f64>> = const { Cell::new(None) };
}

/// The channel of `yield_now`, whose every message wakes the oldest waiting promise.
fn channel() -> Option<MessageChannel> {
    let channel = MessageChannel::new().ok()?;
    let wake = Closure::<dyn FnMut()>::new(|| {
        let oldest = WAITING.with(|w| w.borrow_mut().pop_front());
        if let Some(resolve) = oldest {
            let _ = resolve.call0(&JsValue::NULL);
        }
    });
    channel
        .port1()
        .set_onmessage(Some(wake.as_ref().unchecked_ref()));
    // The handler lives as long as the channel: the page's or the worker's.
    wake.forget();
    Some(channel)
}

/// Lets the events queued meanwhile run (the GPU's answer among them), then goes on: a message
/// to itself, which browsers do not delay as they delay nested timers.
pub async fn yield_now() {
    let promise = Promise::new(&mut |resolve, _| {
        CHANNEL.with(|c| match c {
            Some(c) => {
                WAITING.with(|w| w.borrow_mut().push_back(resolve));
                let _ = c.port2().post_message(&JsValue::NULL);
            }
            None => {
                let _ = resolve.call0(&JsValue::NULL);
            }
        })
    });
    let _ = JsFuture::from(promise).await;
}

/// The answer on `receiver`, waited for while nudging `queue` for the first NUDGE_FOR_MS.
pub async fn answer<T>(queue: &wgpu::Queue, mut receiver: Receiver<T>) -> Result<T, Canceled> {
    let start = now_ms();
    let mut nudged = f64::NEG_INFINITY;
    loop {
        if let Some(answer) = receiver.try_recv().transpose() {
            return answer;
        }
        let now = now_ms();
        if now - start >= NUDGE_FOR_MS {
            // The answer wakes this wait as soon as it comes; the nudges go on beside it until
            // then (or until the wait is dropped).
            let answered = Answered(Rc::new(Cell::new(false)));
            wasm_bindgen_futures::spawn_local(nudge_slowly(queue.clone(), answered.0.clone()));
            if let Some(last) = LAST_LONG_WAIT_MS.get() {
                let near = nudge_near(queue.clone(), answered.0.clone(), start + last);
                wasm_bindgen_futures::spawn_local(near);
            }
            let answer = receiver.await;
            LAST_LONG_WAIT_MS.set(Some(now_ms() - start));
            return answer;
        }
        nudge_fast(queue, &mut nudged).await;
    }
}

/// An empty submission where the last one (at `nudged`, a time of `now_ms`) was NUDGE_EVERY_MS
/// ago or more, then a yield: one turn of the fast nudges.
async fn nudge_fast(queue: &wgpu::Queue, nudged: &mut f64) {
    let now = now_ms();
    if now - *nudged >= NUDGE_EVERY_MS {
        queue.submit(std::iter::empty());
        *nudged = now;
    }
    yield_now().await;
}

/// Set when the wait it belongs to ends, however it ends.
struct Answered(Rc<Cell<bool>>);

impl Drop for Answered {
    fn drop(&mut self) {
        self.0.set(true);
    }
}

/// An empty submission every SLOW_NUDGE_MS until `answered`.
async fn nudge_slowly(queue: wgpu::Queue, answered: Rc<Cell<bool>>) {
    while !answered.get() {
        queue.submit(std::iter::empty());
        sleep(SLOW_NUDGE_MS).await;
    }
}

/// Empty submissions every NUDGE_EVERY_MS from LEAD_MS before `end` (a time of `now_ms`) for
/// NUDGE_FOR_MS, until `answered`.
async fn nudge_near(queue: wgpu::Queue, answered: Rc<Cell<bool>>, end: f64) {
    let from = end - LEAD_MS;
    let wait = (from - now_ms()).floor();
    if wait >= 1.0 {
        sleep(wait as i32).await;
    }
    let until = now_ms().max(from) + NUDGE_FOR_MS;
    let mut nudged = f64::NEG_INFINITY;
    while !answered.get() && now_ms() < until {
        nudge_fast(&queue, &mut nudged).await;
    }
}

/// Sleeps `ms` on the global scope's timer (a page's or a worker's).
pub async fn sleep(ms: i32) {
    let promise = Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        let set_timeout = js_sys::Reflect::get(&global, &JsValue::from_str("setTimeout"))
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        match set_timeout {
            Some(f) => {
                let _ = f.call2(&global, &resolve, &JsValue::from(ms));
            }
            None => {
                let _ = resolve.call0(&JsValue::NULL);
            }
        }
    });
    let _ = JsFuture::from(promise).await;
}
