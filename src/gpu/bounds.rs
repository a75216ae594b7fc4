//! What a device can create and bind: a buffer up to maxBufferSize, a binding up to
//! maxStorageBufferBindingSize. A buffer larger than a binding may be made (GPT-2's 154 MB
//! token embedding where 128 MiB bind): kernels bind it in windows of rows
//! (`ops::row_windows`), and `Gpu::dispatch` refuses any binding past the limit.

use super::{Binding, Gpu};
use crate::error::{Error, Result};

/// Refuses `bytes` past `max`, the device's `limit`.
fn within(limit: &'static str, bytes: u64, max: u64) -> Result<()> {
    match bytes > max {
        true => Err(Error::TooLarge {
            limit,
            requested: bytes,
            max,
        }),
        false => Ok(()),
    }
}

impl Gpu {
    /// Refuses a buffer of `bytes` that the device could not create, before anything is
    /// allocated.
    pub fn check_size(&self, bytes: u64) -> Result<()> {
        within("maxBufferSize", bytes, self.limits.max_buffer_size)
    }

    /// Refuses `bytes` bound at once where the device binds less.
    pub(super) fn check_binding(&self, bytes: u64) -> Result<()> {
        let max = self.limits.max_storage_buffer_binding_size;
        within("maxStorageBufferBindingSize", bytes, max)
    }

    /// Refuses a binding larger than the device binds: a buffer that must be bound in windows.
    pub(super) fn check_bindings(&self, bindings: &[Binding]) -> Result<()> {
        let largest = bindings.iter().map(|b| b.buffer.binding_size()).max();
        self.check_binding(largest.unwrap_or(0))
    }

    /// The largest buffer the device can create and bind, in bytes: a multiple of 16, so
    /// that a view rounded up to whole vec4s never ends past its buffer.
    pub(crate) fn largest_buffer(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
            & !15
    }
}
