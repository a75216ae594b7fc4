//! A file dropped anywhere on the page loads as Load would load it: a checkpoint, or GPT-2's
//! model.safetensors (too large to want a file dialog's hunt twice). Text dragged into the text
//! box is left to the browser: only a drag that carries files is taken.

use super::dom;
use wasm_bindgen::prelude::*;

/// Whether a drag carries files (not a text selection).
fn carries_files(e: &web_sys::DragEvent) -> bool {
    e.data_transfer()
        .is_some_and(|d| d.types().includes(&JsValue::from_str("Files"), 0))
}

/// Hands a dropped .safetensors file to `load`; another kind of file gets a sentence.
pub fn wire_drop(load: fn(web_sys::File)) {
    let over = Closure::<dyn FnMut(web_sys::DragEvent)>::new(|e: web_sys::DragEvent| {
        // Without this the browser opens the file instead of letting the page take it.
        if carries_files(&e) {
            e.prevent_default();
        }
    });
    let drop = Closure::<dyn FnMut(web_sys::DragEvent)>::new(move |e: web_sys::DragEvent| {
        if !carries_files(&e) {
            return;
        }
        e.prevent_default();
        let file = e
            .data_transfer()
            .and_then(|d| d.files())
            .and_then(|f| f.get(0));
        match file {
            Some(f) if f.name().ends_with(".safetensors") => load(f),
            Some(f) => super::show_error(Some(format!(
                "{} is not a .safetensors file: drop a checkpoint or GPT-2's model.safetensors here (a text goes in the text box, or through \"load a text file\").",
                f.name()
            ))),
            None => {}
        }
    });
    let doc = dom::document();
    let _ = doc.add_event_listener_with_callback("dragover", over.as_ref().unchecked_ref());
    let _ = doc.add_event_listener_with_callback("drop", drop.as_ref().unchecked_ref());
    over.forget();
    drop.forget();
}
