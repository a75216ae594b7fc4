//! `webgrad kernel-stats SHADER [NAME=VALUE ...] [--constant NAME=VALUE ...]`: what the GPU's
//! Vulkan driver made of a kernel, as the driver reports it (VK_KHR_pipeline_executable_properties:
//! on NVIDIA the registers an invocation holds, the workgroup memory, the binary's size). A
//! multiprocessor holds as many workgroups at once as its registers and memory allow, so
//! these figures say how many of a kernel's workgroups run side by side, which timing alone
//! does not (docs/log/products.md, "Registers").
//!
//! The kernel is expanded as `webgrad wgsl` expands it and written to SPIR-V by naga with the
//! options wgpu gives it on Vulkan (src/bin/webgrad/kernel_stats/spirv.rs), so the driver
//! compiles the same program as in a run; only the pipeline is made outside wgpu
//! (kernel_stats/vulkan.rs), since wgpu cannot ask for the statistics.

mod spirv;
mod vulkan;

#[derive(clap::Args)]
pub struct KernelStatsArgs {
    /// The shader file (shaders/NAME.wgsl).
    shader: String,
    /// The template slots, NAME=VALUE each (e.g. SLICES=deep BIAS=matmul_no_bias).
    #[arg(value_name = "NAME=VALUE")]
    slots: Vec<String>,
    /// A value for one of the kernel's `override` constants, NAME=VALUE (true, false or a
    /// number); each of them needs one.
    #[arg(long = "constant", value_name = "NAME=VALUE")]
    constants: Vec<String>,
    /// Without wgpu's runtime checks (index clamps, loop bounds, guarded divisions), as
    /// WEBGRAD_UNCHECKED=1 builds the kernels: what the checks cost in registers.
    #[arg(long)]
    unchecked: bool,
}

pub fn kernel_stats(args: KernelStatsArgs) -> Result<(), String> {
    let text = super::wgsl::expanded(&args.shader, &args.slots)?;
    let constants = super::wgsl::name_values(&args.constants, "constant")?
        .into_iter()
        .map(|(name, value)| Ok((name.to_string(), constant_value(name, value)?)))
        .collect::<Result<Vec<_>, String>>()?;
    let kernel = spirv::compile(&text, &constants, !args.unchecked)
        .map_err(|why| format!("{}: {why}", args.shader))?;
    let report = vulkan::statistics(&kernel)?;
    println!("{}: {}", report.device, args.shader);
    for (name, value) in report.statistics {
        println!("  {name}: {value}");
    }
    Ok(())
}

/// An override constant's value as naga takes it: booleans as 1 and 0.
fn constant_value(name: &str, value: &str) -> Result<f64, String> {
    match value {
        "true" => Ok(1.0),
        "false" => Ok(0.0),
        number => number
            .parse()
            .map_err(|_| format!("constant {name}: {value:?} is not true, false or a number")),
    }
}
