//! Typed errors: every misuse of the library is a value the caller can show as a sentence.

use thiserror::Error;

/// Everything that can go wrong in webgrad.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    #[error("no GPU adapter was found ({0}); webgrad can still run on the CPU backend")]
    NoAdapter(String),
    #[error("the GPU device could not be created: {0}")]
    DeviceRequest(String),
    #[error("a tensor of {requested} bytes exceeds the device's {limit} of {max} bytes")]
    TooLarge {
        limit: &'static str,
        requested: u64,
        max: u64,
    },
    #[error("{op}: shapes {a:?} and {b:?} do not fit together ({why})")]
    Shape {
        op: &'static str,
        a: Vec<usize>,
        b: Vec<usize>,
        why: String,
    },
    #[error("{op}: {why}")]
    Invalid { op: &'static str, why: String },
    #[error("{op}: expected a {expected} tensor, got {got}")]
    DType {
        op: &'static str,
        expected: &'static str,
        got: &'static str,
    },
    #[error("{0}: the tensor was freed and its data can no longer be read")]
    Freed(&'static str),
    #[error("{0}: the tensors live on different devices")]
    DeviceMismatch(&'static str),
    #[error("backward: {0}")]
    Backward(String),
    #[error("the GPU reported an error: {0}")]
    Gpu(String),
    #[error("kernel {kernel}: {why}")]
    Kernel { kernel: String, why: String },
    #[error("reading GPU data back failed: {0}")]
    Readback(String),
    /// Training produced a NaN or infinite loss. The session has put back the weights the last
    /// finite loss was computed from.
    #[error("the {what} became {value} at step {step}: the run diverged, and training stopped with the last good weights kept (a smaller learning rate may help)")]
    Diverged {
        what: &'static str,
        value: f32,
        step: u64,
    },
}

/// Shorthand used across the crate.
pub type Result<T> = std::result::Result<T, Error>;
