//! Typed kernel parameters: each kernel's uniform block is a `#[repr(C)]` Pod struct declared
//! with `kernel_params!`, which also lists its fields (name, byte offset, WGSL type) so that the
//! pipeline cache can check the struct against the shader's `struct Params` when it compiles.

/// The threads of a workgroup in the elementwise kernels (one thread per element). Pasted into
/// every shader as the WGSL constant of the same name, and used by the launches that count
/// workgroups, so the two cannot drift.
pub const ELEMENTWISE_WORKGROUP: u32 = 256;
/// The threads of a workgroup in the row kernels (one row per workgroup, shaders/rowwise.wgsl):
/// a row of a few hundred values is summed in two rounds of 64 lanes.
pub const ROW_WORKGROUP: u32 = 64;
// shaders/rowwise.wgsl's trees halve from 32 lanes, written out: no more than 64 lanes.
const _: () = assert!(ROW_WORKGROUP <= 64 && ROW_WORKGROUP.is_power_of_two());

/// The most parameter bytes one kernel may take (its window of the batch's uniform arena).
pub(crate) const PARAM_BYTES: u64 = 256;

/// WGSL constants generated from the Rust ones above, pasted at the top of every shader.
pub(crate) fn prelude() -> String {
    format!(
        "const ELEMENTWISE_WORKGROUP: u32 = {ELEMENTWISE_WORKGROUP}u;\n\
         const ROW_WORKGROUP: u32 = {ROW_WORKGROUP}u;\n"
    )
}

/// One field of a parameter struct as the shader must declare it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamField {
    pub name: &'static str,
    /// Byte offset in the Rust struct; the WGSL field must sit at the same one.
    pub offset: usize,
    /// The WGSL type, e.g. `u32` or `array<vec4<u32>, 2>`.
    pub wgsl: String,
}

/// A kernel's parameter block: the bytes written to its uniform binding. Implemented by
/// `kernel_params!`; fields whose names start with `_` are padding the shader does not name.
pub trait KernelParams: bytemuck::Pod {
    /// The named fields in declaration order.
    fn fields() -> Vec<ParamField>;
}

/// A Rust field type and the WGSL type it stands for.
pub trait WgslType {
    fn wgsl() -> String;
}

impl WgslType for u32 {
    fn wgsl() -> String {
        "u32".into()
    }
}

impl WgslType for i32 {
    fn wgsl() -> String {
        "i32".into()
    }
}

impl WgslType for f32 {
    fn wgsl() -> String {
        "f32".into()
    }
}

/// Padding (a WGSL uniform cannot hold it: arrays there need 16-byte elements).
impl<const N: usize> WgslType for [u32; N] {
    fn wgsl() -> String {
        format!("array<u32,{N}>")
    }
}

impl<const N: usize> WgslType for [[u32; 4]; N] {
    fn wgsl() -> String {
        format!("array<vec4<u32>,{N}>")
    }
}

/// Declares a kernel's parameter struct: `#[repr(C)]`, Pod, every field public, and its
/// `KernelParams` field list. Padding the WGSL layout needs is a field named `_pad…`.
#[macro_export]
macro_rules! kernel_params {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
        $vis struct $name { $(pub $field: $ty),* }

        impl $crate::gpu::KernelParams for $name {
            fn fields() -> Vec<$crate::gpu::ParamField> {
                let all: Vec<$crate::gpu::ParamField> = vec![$($crate::gpu::ParamField {
                    name: stringify!($field),
                    offset: std::mem::offset_of!($name, $field),
                    wgsl: <$ty as $crate::gpu::WgslType>::wgsl(),
                }),*];
                all.into_iter().filter(|f| !f.name.starts_with('_')).collect()
            }
        }
    };
}

kernel_params! {
    /// The parameters of a kernel that takes none.
    pub struct NoParams {}
}
