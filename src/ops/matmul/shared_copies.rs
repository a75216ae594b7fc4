//! The f16 copies of a product's operands (operand_f16.rs) shared within a scope: an operand
//! copied once serves every product of the scope that reads the same rows. A product's copies
//! are kept with its op and its backward runs in a scope given them, so that its gradients'
//! products read them again: g is copied once for both gradients, x and W not again
//! (nanochar's copies went from 142 a step to 74 on an H200, 2.9 ms to 1.5).

use crate::tensor::{Storage, Tensor};
use std::cell::RefCell;

thread_local! {
    /// The copies of the enclosing `sharing` scope, if any.
    static SHARED: RefCell<Option<Vec<Shared>>> = const { RefCell::new(None) };
}

/// What an f16 copy holds: rows lying one after another in a tensor's storage, `rows` rows of
/// `cols` values `row` apart from `offset`, whatever matrices they were asked for as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct CopiedRows {
    pub(super) storage: *const RefCell<Storage>,
    pub(super) offset: usize,
    pub(super) row: usize,
    pub(super) cols: usize,
    pub(super) rows: usize,
}

/// A copy made in a `sharing` scope: what it copies, the copy, and its source, held so that
/// the storage `rows` names lives as long.
#[derive(Clone)]
pub(crate) struct Shared {
    rows: CopiedRows,
    copy: Tensor,
    _source: Tensor,
}

/// Runs `f` with the copies it makes shared: an operand whose rows `known`, an enclosing scope
/// or an earlier product of `f` copied already is not copied again. Returns `f`'s result and
/// the copies made; the enclosing scope keeps them too. Only around ops that write nothing into
/// their operands' storage in the meantime: a product and its backward (the copies of a
/// product's operands, kept with it, serve its gradients: nanochar's backward then copies half
/// as much).
pub(crate) fn sharing<T>(known: &[Shared], f: impl FnOnce() -> T) -> (T, Vec<Shared>) {
    let outer = SHARED.with(|s| s.borrow().clone());
    let mut start = outer.clone().unwrap_or_default();
    start.extend_from_slice(known);
    let before = start.len();
    SHARED.with(|s| *s.borrow_mut() = Some(start));
    let out = f();
    let now = SHARED.with(|s| s.borrow_mut().take()).unwrap_or_default();
    let made = now[before.min(now.len())..].to_vec();
    let outer = outer.map(|mut o| {
        o.extend(made.iter().cloned());
        o
    });
    SHARED.with(|s| *s.borrow_mut() = outer);
    (out, made)
}

/// The copy of `rows` the enclosing scope holds, if any.
pub(super) fn known(rows: CopiedRows) -> Option<Tensor> {
    SHARED.with(|s| {
        let shared = s.borrow();
        let found = shared.iter().flatten().find(|c| c.rows == rows);
        found.map(|c| c.copy.clone())
    })
}

/// Keeps `copy` of `rows` of `source` for the rest of the enclosing scope, if there is one.
pub(super) fn keep(rows: CopiedRows, copy: &Tensor, source: &Tensor) {
    SHARED.with(|s| {
        if let Some(shared) = s.borrow_mut().as_mut() {
            shared.push(Shared {
                rows,
                copy: copy.clone(),
                _source: source.clone(),
            });
        }
    });
}
