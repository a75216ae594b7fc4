//! The page's side of autotuning (src/tune/): what the training worker measured on this
//! browser's GPU, kept in the browser's storage and handed to the worker in its URL when the
//! page opens (the worker cannot read the page's storage), so that a second visit measures
//! nothing.

use super::runs::storage;

/// The storage key, and the worker URL's parameter that carries the same text.
const KEY: &str = "webgrad-tuning";
pub const PARAM: &str = "tuned";

/// What earlier visits measured (empty when nothing, or when storage is off).
pub fn stored() -> String {
    storage()
        .and_then(|s| s.get_item(KEY).ok()?)
        .unwrap_or_default()
}

/// Keeps what the worker measured; a full or blocked storage only means it is measured again.
pub fn store(text: &str) {
    if let Some(s) = storage() {
        let _ = s.set_item(KEY, text);
    }
}
