//! A tensor's history: the op that made it, kept until backward has passed through it.

use super::Tensor;
use crate::autograd::Op;

/// How a tensor came to be, for backward.
pub(super) enum History {
    /// A leaf, or made where no gradient was wanted.
    Untracked,
    /// Made by this op, which backward has yet to pass through.
    Made(Op),
    /// Made by an op that backward passed through and let go of (`Tensor::release_op`): a
    /// second backward through here is refused.
    Released,
}

impl Tensor {
    /// The op that made this tensor, until backward has let go of it (`release_op`).
    pub(crate) fn op(&self) -> Option<Op> {
        match &*self.0.history.borrow() {
            History::Made(op) => Some(op.clone()),
            History::Untracked | History::Released => None,
        }
    }

    /// Forgets the op that made this tensor, and with it what the op saved for backward: once
    /// backward has passed through a tensor, its inputs need not outlive it (GPT-2's blocks,
    /// recomputed, would otherwise hold every activation of a block until its last gradient).
    pub(crate) fn release_op(&self) {
        *self.0.history.borrow_mut() = History::Released;
    }

    /// Whether backward has passed through this tensor already (`release_op`).
    pub(crate) fn op_released(&self) -> bool {
        matches!(*self.0.history.borrow(), History::Released)
    }
}
