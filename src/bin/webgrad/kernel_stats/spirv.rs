//! An expanded kernel as wgpu hands it to a Vulkan driver: naga's SPIR-V with wgpu-hal 30's
//! options on a device with robust buffer access (the buffers' indices left to the driver,
//! every other index clamped, loops bounded, divisors guarded: wgpu's runtime checks), its
//! `override` constants given, and the buffers it binds.

use naga::back::spv;
use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};

/// A kernel ready for a pipeline: its SPIR-V words and its bindings in group 0.
pub struct Kernel {
    pub words: Vec<u32>,
    pub bindings: Vec<Binding>,
}

/// One of a kernel's bindings: its number and whether it is the uniform (else a storage
/// buffer).
#[derive(Debug, PartialEq)]
pub struct Binding {
    pub number: u32,
    pub uniform: bool,
}

/// `text` (WGSL, expanded) compiled for its entry point `main` with `constants`, and `checked`
/// as wgpu runs it (else without its runtime checks).
pub fn compile(text: &str, constants: &[(String, f64)], checked: bool) -> Result<Kernel, String> {
    let module = naga::front::wgsl::parse_str(text).map_err(|e| e.emit_to_string(text))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| e.emit_to_string(text))?;
    let constants: naga::back::PipelineConstants = constants.iter().cloned().collect();
    let (module, info) = naga::back::pipeline_constants::process_overrides(
        &module,
        &info,
        Some((naga::ShaderStage::Compute, "main")),
        &constants,
    )
    .map_err(|e| format!("its constants: {e}"))?;
    let bindings = bindings(&module)?;
    let pipeline = spv::PipelineOptions {
        entry_point: "main".into(),
        shader_stage: naga::ShaderStage::Compute,
    };
    let words = spv::write_vec(&module, &info, &options(checked), Some(&pipeline))
        .map_err(|e| format!("SPIR-V: {e}"))?;
    Ok(Kernel { words, bindings })
}

/// wgpu-hal 30's options for a Vulkan 1.3 device with robust buffer access 2 and the
/// workgroup memory zeroed by the driver (src/vulkan/adapter.rs there), its group 0 bound as
/// group 0.
fn options(checked: bool) -> spv::Options<'static> {
    let index = match checked {
        true => BoundsCheckPolicy::Restrict,
        false => BoundsCheckPolicy::Unchecked,
    };
    spv::Options {
        lang_version: (1, 6),
        flags: spv::WriterFlags::empty(),
        fake_missing_bindings: true,
        capabilities: None,
        bounds_check_policies: BoundsCheckPolicies {
            index,
            buffer: BoundsCheckPolicy::Unchecked,
            image_load: BoundsCheckPolicy::Unchecked,
            binding_array: BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::Native,
        force_loop_bounding: checked,
        emit_int_div_checks: checked,
        ..spv::Options::default()
    }
}

/// The buffers the kernel binds, all in group 0 as webgrad's kernels bind them.
fn bindings(module: &naga::Module) -> Result<Vec<Binding>, String> {
    let mut out = Vec::new();
    for (_, var) in module.global_variables.iter() {
        let Some(at) = &var.binding else { continue };
        let uniform = match var.space {
            naga::AddressSpace::Uniform => true,
            naga::AddressSpace::Storage { .. } => false,
            other => {
                return Err(format!(
                    "binding {} is a {other:?}, not a buffer",
                    at.binding
                ))
            }
        };
        if at.group != 0 {
            return Err(format!(
                "binding {} is in group {}, not 0",
                at.binding, at.group
            ));
        }
        out.push(Binding {
            number: at.binding,
            uniform,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: &str = "
        override SCALE: f32;
        @group(0) @binding(0) var<uniform> n: u32;
        @group(0) @binding(1) var<storage, read> x: array<f32>;
        @group(0) @binding(2) var<storage, read_write> y: array<f32>;
        @compute @workgroup_size(64)
        fn main(@builtin(global_invocation_id) id: vec3<u32>) {
            for (var i = id.x; i < n; i += 4096u) { y[i] = x[i] * SCALE; }
        }";

    /// The kernel's buffers are found with their kinds, and it compiles to SPIR-V (its magic
    /// number first), the checked program longer than the unchecked one (its loop's bound).
    #[test]
    fn a_kernel_compiles_with_its_bindings_and_checks() {
        let scale = [("SCALE".to_string(), 2.0)];
        let checked = compile(KERNEL, &scale, true).unwrap();
        let unchecked = compile(KERNEL, &scale, false).unwrap();
        let number = |number, uniform| Binding { number, uniform };
        assert_eq!(
            checked.bindings,
            [number(0, true), number(1, false), number(2, false)]
        );
        assert_eq!(checked.words[0], 0x0723_0203);
        assert!(checked.words.len() > unchecked.words.len());
    }

    /// A constant left without a value, or a kernel that does not parse, is a message.
    #[test]
    fn a_missing_constant_or_a_wrong_kernel_is_an_error() {
        let missing = compile(KERNEL, &[], true).err().unwrap();
        assert!(missing.contains("constants"), "{missing}");
        let wrong = compile("fn main( {", &[], true).err().unwrap();
        assert!(!wrong.is_empty());
    }
}
