//! Which limits a device is opened with: the adapter's own (what the hardware offers, so that
//! big models can use it), or only those WebGPU guarantees every device, to check that every
//! kernel family has a variant that runs on the least capable device the standard allows
//! (16 KiB of workgroup memory, 256 invocations a workgroup, 8 storage buffers a stage,
//! 128 MiB bindings).

/// The environment variable that asks for WebGPU's guaranteed limits natively.
pub const LIMITS_VAR: &str = "WEBGRAD_LIMITS";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LimitsAsked {
    /// The adapter's limits.
    #[default]
    Adapter,
    /// Only WebGPU's guaranteed limits (`wgpu::Limits::defaults()`).
    Guaranteed,
}

impl LimitsAsked {
    /// Natively, `WEBGRAD_LIMITS=webgpu` asks for the guaranteed limits; any other value is
    /// refused by name rather than ignored.
    pub fn from_env() -> Result<LimitsAsked, String> {
        match std::env::var(LIMITS_VAR).ok().as_deref() {
            None | Some("") | Some("adapter") => Ok(LimitsAsked::Adapter),
            Some("webgpu") => Ok(LimitsAsked::Guaranteed),
            Some(other) => Err(format!(
                "{LIMITS_VAR}={other:?} is not a choice: use \"webgpu\" (only the limits WebGPU guarantees) or \"adapter\""
            )),
        }
    }

    /// The limits to open the device with on an adapter offering `offered`.
    pub fn limits(self, offered: wgpu::Limits) -> wgpu::Limits {
        match self {
            LimitsAsked::Adapter => offered,
            LimitsAsked::Guaranteed => wgpu::Limits::defaults(),
        }
    }
}
