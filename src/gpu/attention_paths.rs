//! Which path each shape of packed causal attention takes on this device, where one was
//! measured fastest (src/tune/attention.rs): the kernels on the matrix units, the T × T scores
//! through the product kernels, the tiled kernels or the row kernels. Which is faster depends
//! on the GPU, the sequence's length and the precision, so the choice is timed, not fixed.

use super::choices::Choices;

/// Attention as its path's choice depends on it: `batch` sequences of `t` positions, `heads`
/// heads of `d` values, and whether the run's products may take the f16 matrix units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttentionShape {
    pub batch: usize,
    pub t: usize,
    pub heads: usize,
    pub d: usize,
    pub f16: bool,
}

/// The kernels one attention runs on (src/ops/attention/).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttentionPath {
    /// The FlashAttention tiling on the matrix units (matrix.rs).
    Matrix,
    /// The T × T scores through the product kernels, a causal softmax between (scores.rs).
    Scores,
    /// The FlashAttention tiling on the GPU's arithmetic (tiled.rs).
    Tiled,
    /// A thread a row (causal.rs): where the tiled kernels cannot run (an emulated GPU, heads
    /// not a multiple of 4 or wider than 64).
    Rows,
}

/// The paths chosen on one device, and the shapes run without one since they were last taken
/// for measuring.
pub type AttentionPaths = Choices<AttentionShape, AttentionPath>;
