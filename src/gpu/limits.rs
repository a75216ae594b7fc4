//! Which limits a device is opened with: the adapter's own (what the hardware offers, so that
//! big models can use it), or only those WebGPU guarantees every device, to check that every
//! kernel family has a variant that runs on the least capable device the standard allows
//! (16 KiB of workgroup memory, 256 invocations a workgroup, 8 storage buffers a stage,
//! 128 MiB bindings).

/// The environment variable that asks for WebGPU's guaranteed limits natively.
pub const LIMITS_VAR: &str = "WEBGRAD_LIMITS";
/// The page's link parameter that asks for them in the browser (`?limits=webgpu`).
pub const LIMITS_PARAM: &str = "limits";
/// The value that asks for them, in either.
const GUARANTEED: &str = "webgpu";

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
            Some(GUARANTEED) => Ok(LimitsAsked::Guaranteed),
            Some(other) => Err(format!(
                "{LIMITS_VAR}={other:?} is not a choice: use \"webgpu\" (only the limits WebGPU guarantees) or \"adapter\""
            )),
        }
    }

    /// What a page's query string (`?…`) asks for: `limits=webgpu` the guaranteed limits.
    pub fn from_query(search: &str) -> LimitsAsked {
        let wanted = format!("{LIMITS_PARAM}={GUARANTEED}");
        match search
            .trim_start_matches('?')
            .split('&')
            .any(|p| p == wanted)
        {
            true => LimitsAsked::Guaranteed,
            false => LimitsAsked::Adapter,
        }
    }

    /// The query parameter that carries this choice on (none for the adapter's limits).
    pub fn to_query(self) -> Option<String> {
        (self == LimitsAsked::Guaranteed).then(|| format!("{LIMITS_PARAM}={GUARANTEED}"))
    }

    /// The limits to open the device with on an adapter offering `offered`.
    pub fn limits(self, offered: wgpu::Limits) -> wgpu::Limits {
        match self {
            LimitsAsked::Adapter => offered,
            LimitsAsked::Guaranteed => wgpu::Limits::defaults(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LimitsAsked::{Adapter, Guaranteed};
    use super::*;

    #[test]
    fn only_limits_webgpu_asks_for_the_guaranteed_limits() {
        assert_eq!(
            LimitsAsked::from_query("?task=text&limits=webgpu"),
            Guaranteed
        );
        assert_eq!(LimitsAsked::from_query("limits=webgpu"), Guaranteed);
        assert_eq!(LimitsAsked::from_query("?limits=webgpux"), Adapter);
        assert_eq!(LimitsAsked::from_query("?task=spiral"), Adapter);
        assert_eq!(Guaranteed.to_query().as_deref(), Some("limits=webgpu"));
        assert_eq!(Adapter.to_query(), None);
        assert_eq!(
            Guaranteed
                .limits(wgpu::Limits::downlevel_defaults())
                .max_compute_workgroup_storage_size,
            16 << 10
        );
    }
}
