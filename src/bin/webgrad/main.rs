//! The command-line trainer: `webgrad train`, `webgrad sample`, `webgrad bench`, `webgrad wgsl`,
//! `webgrad kernel-stats`, parsed by clap. Every mistake prints one line and exits with status
//! 2; `--help` works on each command.

#[cfg(not(target_arch = "wasm32"))]
mod args;
#[cfg(not(target_arch = "wasm32"))]
mod bench;
#[cfg(not(target_arch = "wasm32"))]
mod commands;
#[cfg(not(target_arch = "wasm32"))]
mod destination;
#[cfg(not(target_arch = "wasm32"))]
mod gpt2;
// Vulkan's (wgpu-hal has its Vulkan backend off Apple's systems only).
#[cfg(not(any(target_arch = "wasm32", target_vendor = "apple")))]
mod kernel_stats;
#[cfg(not(target_arch = "wasm32"))]
mod lora;
#[cfg(not(target_arch = "wasm32"))]
mod saves;
#[cfg(not(target_arch = "wasm32"))]
mod wgsl;

#[cfg(not(target_arch = "wasm32"))]
use clap::{error::ErrorKind, Parser, Subcommand};

/// Train small neural networks on your GPU with webgrad's own WGSL kernels.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Parser)]
#[command(name = "webgrad", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[cfg(not(target_arch = "wasm32"))]
#[derive(Subcommand)]
enum Command {
    /// Train a model on a task; prints a JSON line per evaluation.
    Train(Box<args::TrainArgs>),
    /// Generate text from a GPT checkpoint saved by `train --save`, or from GPT-2 as Hugging
    /// Face publishes it.
    Sample(args::SampleArgs),
    /// Time the benchmark workloads (docs/BENCHMARKS.md), a JSON line each.
    Bench(bench::BenchArgs),
    /// Print a shader as the GPU gets it: its includes, slots and repeats expanded.
    Wgsl(wgsl::WgslArgs),
    /// What the GPU's Vulkan driver made of a kernel: its registers, memory and size, as the
    /// driver reports them.
    #[cfg(not(target_vendor = "apple"))]
    KernelStats(kernel_stats::KernelStatsArgs),
}

/// Exit status for every mistake in the input, from the arguments to the files they name.
#[cfg(not(target_arch = "wasm32"))]
const BAD_INPUT: i32 = 2;

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help and --version: printed to stdout, success.
            print!("{e}");
            return;
        }
        Err(e) if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // No command at all: the whole help, as a failure.
            eprint!("{e}");
            std::process::exit(BAD_INPUT);
        }
        Err(e) => fail(&one_line(&e.render().to_string())),
    };
    let result = match cli.command {
        Command::Train(args) => commands::train(*args),
        Command::Sample(args) => commands::sample(args),
        Command::Bench(args) => bench::bench(args),
        Command::Wgsl(args) => wgsl::wgsl(args),
        #[cfg(not(target_vendor = "apple"))]
        Command::KernelStats(args) => kernel_stats::kernel_stats(args),
    };
    if let Err(message) = result {
        fail(&message);
    }
}

/// Clap's message on one line: its sentence, possible values and tip, without the usage
/// block that follows.
#[cfg(not(target_arch = "wasm32"))]
fn one_line(rendered: &str) -> String {
    rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(not(target_arch = "wasm32"))]
fn fail(message: &str) -> ! {
    eprintln!("webgrad: {message}");
    std::process::exit(BAD_INPUT);
}

#[cfg(target_arch = "wasm32")]
fn main() {}
