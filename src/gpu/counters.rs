//! What the device counts as it works: buffers, bytes, dispatches, bind groups, submits.

/// Counters of GPU work, readable by callers to check that a training step stays lean.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// GPU buffers ever created (pool misses).
    pub buffers_created: u64,
    /// Bytes held by live tensors.
    pub bytes_live: u64,
    /// Bytes of all GPU buffers the pool owns, in use or free.
    pub bytes_allocated: u64,
    /// Compute dispatches recorded.
    pub dispatches: u64,
    /// Bind groups created (the rest came from the cache).
    pub bind_groups_created: u64,
    /// Queue submits.
    pub submits: u64,
    /// Bytes of kernel parameters uploaded (none for a dispatch whose slot holds its
    /// parameters already: `Batch::write_params`).
    pub param_bytes: u64,
}

impl Counters {
    /// The work done between `mark` and `self` (bytes are the current values, not differences).
    pub fn since(&self, mark: &Counters) -> Counters {
        Counters {
            buffers_created: self.buffers_created - mark.buffers_created,
            bytes_live: self.bytes_live,
            bytes_allocated: self.bytes_allocated,
            dispatches: self.dispatches - mark.dispatches,
            bind_groups_created: self.bind_groups_created - mark.bind_groups_created,
            submits: self.submits - mark.submits,
            param_bytes: self.param_bytes - mark.param_bytes,
        }
    }
}
