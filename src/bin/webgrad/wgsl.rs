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
    let text = expanded(&args.shader, &args.slots)?;
    use std::io::Write;
    write!(std::io::stdout(), "{text}").map_err(|e| format!("cannot write the shader: {e}"))
}

/// The shader file `shader` as the GPU gets it, its template slots given as `NAME=VALUE`
/// arguments (`webgrad kernel-stats` compiles it so too).
pub fn expanded(shader: &str, slots: &[String]) -> Result<String, String> {
    let source =
        std::fs::read_to_string(shader).map_err(|e| format!("cannot read {shader}: {e}"))?;
    let slots: Vec<(&str, String)> = name_values(slots, "slot")?
        .into_iter()
        .map(|(name, value)| (name, value.to_string()))
        .collect();
    webgrad::gpu::expand_wgsl(&source, &slots).map_err(|why| format!("{shader}: {why}"))
}

/// `NAME=VALUE` arguments split, each a `what` (a slot, a constant).
pub fn name_values<'a>(args: &'a [String], what: &str) -> Result<Vec<(&'a str, &'a str)>, String> {
    args.iter()
        .map(|s| match s.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name, value)),
            _ => Err(format!("{s:?} is not a {what}: write NAME=VALUE")),
        })
        .collect()
}
