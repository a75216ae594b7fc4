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
    /// The GPU device stopped working (a driver reset, a browser reclaiming it); everything on
    /// it is gone, and only a new device can go on.
    #[error("the GPU device was lost ({0})")]
    DeviceLost(String),
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

impl Error {
    /// The cause alone, for a message that already says what was being done: an `Invalid`'s
    /// reason without the name of the operation that found it, the whole message otherwise.
    pub fn reason(&self) -> String {
        match self {
            Error::Invalid { why, .. } => why.clone(),
            e => e.to_string(),
        }
    }

    /// The cause as a sentence of its own, as the page shows it: capitalised, with a full stop.
    pub fn sentence(&self) -> String {
        let reason = self.reason();
        // A tensor's name keeps its case, as it is in the file ("layers.0.bias is missing").
        let first_word = reason.split(' ').next().unwrap_or_default();
        let named = first_word.trim_end_matches([':', ',']).contains(['.', '_']);
        let mut chars = reason.chars();
        let mut s: String = match named {
            true => String::new(),
            false => chars
                .next()
                .map(|c| c.to_uppercase().collect())
                .unwrap_or_default(),
        };
        s.push_str(chars.as_str());
        if !s.ends_with(['.', '!', '?']) {
            s.push('.');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn sentences_drop_the_operation_and_read_as_sentences() {
        let e = Error::Invalid {
            op: "checkpoint",
            why: "this is not a safetensors file".into(),
        };
        assert_eq!(e.to_string(), "checkpoint: this is not a safetensors file");
        assert_eq!(e.reason(), "this is not a safetensors file");
        assert_eq!(e.sentence(), "This is not a safetensors file.");
        let e = Error::Readback("the device was lost".into());
        assert_eq!(
            e.sentence(),
            "Reading GPU data back failed: the device was lost."
        );
        let e = Error::Invalid {
            op: "checkpoint",
            why: "layers.0.bias is missing".into(),
        };
        assert_eq!(e.sentence(), "layers.0.bias is missing.");
    }
}
