//! `webgrad bench [--quick] [--only NAME,NAME] [--untimed-products]`: the workloads of BENCHMARKS.md (webgrad::bench),
//! one line each in the format of torch_ref.py. WEBGRAD_UNCHECKED=1 runs the shaders without
//! runtime checks (or without those it names: src/gpu/pipelines.rs) and marks the names
//! "_unchecked"; WEBGRAD_PROFILE=1 adds the GPU time per kernel in a step under each
//! workload's line.

use std::io::Write;
use webgrad::bench::{BenchOptions, Products};
use webgrad::Gpu;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Fewer steps per workload (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Only these workloads, by name or its start, comma-separated. GPT-2 124M (gpt2) and
    /// the CPU backend's steps (cpu) run only when named.
    #[arg(long, value_name = "NAME,NAME", value_delimiter = ',')]
    only: Vec<String>,
    /// Run each product as the planner plans it and each attention on its rule's path,
    /// without timing their variants first (what the autotuner's choice is compared with;
    /// WEBGRAD_AUTOTUNE=off does so too, and measures nothing else either).
    #[arg(long)]
    untimed_products: bool,
    /// The products' precision (as `webgrad train --precision`); the workloads run in f16
    /// are named with "_f16" after them.
    #[arg(long, value_name = "f32|f16|auto", default_value = "f32")]
    precision: webgrad::gpu::Precision,
}

pub fn bench(args: BenchArgs) -> Result<(), String> {
    let only: Vec<String> = args
        .only
        .into_iter()
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty())
        .collect();
    // A name that matches nothing would silently run nothing.
    if let Some(unknown) = webgrad::bench::unknown(&only) {
        return Err(format!(
            "--only {unknown:?} names no workload; the workloads are {}",
            webgrad::bench::names().join(", ")
        ));
    }
    let mut options = BenchOptions {
        quick: args.quick,
        only,
        suffix: if webgrad::gpu::unchecked_shaders() {
            "_unchecked".into()
        } else {
            String::new()
        },
        profile: false,
        products: match args.untimed_products
            || std::env::var("WEBGRAD_AUTOTUNE").is_ok_and(|v| v == "off")
        {
            true => Products::Planned,
            false => Products::Timed,
        },
    };
    pollster::block_on(async {
        let gpu = Gpu::new().await?;
        let tuned = webgrad::tune::tune_natively(&gpu);
        let precision = webgrad::bench::set_precision(&gpu, args.precision, &mut options)?;
        // A closed stdout (`| head`) ends nothing early and panics nothing: lines go nowhere.
        let show = |line: String| {
            let _ = writeln!(std::io::stdout(), "{line}");
        };
        show(format!(
            "device: {} ({:?}); {} {}",
            gpu.adapter_name(),
            gpu.adapter_info().backend,
            tuned.sentence().unwrap_or_else(|| "nothing to tune".into()),
            precision.sentence()
        ));
        webgrad::bench::run(&gpu, &options, show).await?;
        Ok::<(), webgrad::Error>(())
    })
    .map_err(|e| e.to_string())
}
