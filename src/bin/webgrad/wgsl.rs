//! `webgrad wgsl SHADER [NAME=VALUE ...]`: a shader as the GPU gets it, through the same template
//! stage as every kernel (the prelude, includes, slots and repeats), for reading what a variant
//! compiles to and for probes that run a kernel outside the library.

#[derive(clap::Args)]
pub struct WgslArgs {
    /// The shader file (shaders/NAME.wgsl).
    shader: String,
    /// The template slots, NAME=VALUE each (e.g. BIAS=matmul_no_bias ROWS=16).
    #[arg(value_name = "NAME=VALUE")]
    slots: Vec<String>,
}

pub fn wgsl(args: WgslArgs) -> Result<(), String> {
    let source = std::fs::read_to_string(&args.shader)
        .map_err(|e| format!("cannot read {}: {e}", args.shader))?;
    let slots = args
        .slots
        .iter()
        .map(|s| match s.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name, value.to_string())),
            _ => Err(format!("{s:?} is not a slot: write NAME=VALUE")),
        })
        .collect::<Result<Vec<_>, String>>()?;
    let text = webgrad::gpu::expand_wgsl(&source, &slots)
        .map_err(|why| format!("{}: {why}", args.shader))?;
    use std::io::Write;
    write!(std::io::stdout(), "{text}").map_err(|e| format!("cannot write the shader: {e}"))
}
