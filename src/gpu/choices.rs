//! What a device runs each shape of a kernel family as, where it was measured fastest: the
//! op notes the shapes it runs without a choice and follows what was chosen; the measurement
//! (src/tune/) times the shapes noted and chooses. Plain data here, so that the device holds
//! it without knowing the ops. Products (product_variants.rs) and attention
//! (attention_paths.rs) each keep one.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

/// The most shapes noted and not yet measured: a program of random shapes (the op tests) notes
/// no more than this, and a model has far fewer.
const MOST_NOTED: usize = 256;

/// The choices made on one device, and the shapes run without one since they were last taken
/// for measuring.
#[derive(Debug)]
pub struct Choices<S, V> {
    chosen: HashMap<S, V>,
    noted: Vec<S>,
    /// Every shape ever noted: a shape is noted once (this runs for every call of the op).
    seen: HashSet<S>,
}

impl<S, V> Default for Choices<S, V> {
    fn default() -> Self {
        Choices {
            chosen: HashMap::new(),
            noted: Vec::new(),
            seen: HashSet::new(),
        }
    }
}

impl<S: Copy + Eq + Hash, V: Copy> Choices<S, V> {
    pub fn chosen(&self, shape: &S) -> Option<V> {
        self.chosen.get(shape).copied()
    }

    pub fn choose(&mut self, shape: S, choice: V) {
        self.noted.retain(|s| *s != shape);
        self.chosen.insert(shape, choice);
    }

    /// Remembers that `shape` ran without a choice (once, up to MOST_NOTED).
    pub fn note(&mut self, shape: S) {
        if self.noted.len() < MOST_NOTED && self.seen.insert(shape) {
            self.noted.push(shape);
        }
    }

    /// The shapes noted since the last call, in the order they first ran.
    pub fn take_noted(&mut self) -> Vec<S> {
        std::mem::take(&mut self.noted)
    }

    /// Whether any shape waits to be measured.
    pub fn any_noted(&self) -> bool {
        !self.noted.is_empty()
    }
}
