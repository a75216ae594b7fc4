//! Timing a workload and printing its line: medians of steps waited for, the pipelined rate,
//! the CPU time of recording, and the GPU counters of one step.

use crate::{Counters, Gpu, Result};
use std::rc::Rc;

/// Whether a workload's product shapes are timed as each of their variants before it is
/// (`WEBGRAD_AUTOTUNE=off` natively: not), or run as the planner plans them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Products {
    #[default]
    Timed,
    Planned,
}

/// What one workload's timing measured.
pub(super) struct Timing {
    /// Median seconds of a step waited for to its end.
    pub waited: f64,
    /// Seconds per step when `reps` steps are recorded back to back with one wait at the end,
    /// as the playground's loop runs them: the median of up to `PIPELINED_RUNS` such runs.
    pipelined: f64,
    /// Median CPU seconds spent recording one step (building the graph and its dispatches),
    /// before its last submit and the wait.
    recording: f64,
    /// The counters of the last waited step.
    counters: Counters,
    /// The counters of all the steps run back to back, every run's (after warm-up none should
    /// create a buffer or a bind group either).
    pipelined_counters: Counters,
    /// When profiling, the GPU time and calls of each kernel in a step waited for (the mean
    /// over those steps; the warm-up and the product timing left out).
    profile: Option<String>,
}

/// Runs of `reps` steps back to back that the pipelined figure is the median of, at most: one
/// run of an mlp's 30 steps lasts 5-7 ms in the page, which one pause of the page moves by a
/// sixth. Runs stop once they took `PIPELINED_SECONDS` (a CPU-emulated GPU's take seconds each).
const PIPELINED_RUNS: usize = 5;
const PIPELINED_SECONDS: f64 = 3.0;

/// The least time the warm-up's runs back to back take. In the page V8 first compiles the
/// WebAssembly with its baseline compiler and moves each function to its optimizing one once
/// it has run enough: with the baseline compiler off (`--js-flags=--no-liftoff`) the page's
/// waited mlp step recorded in 5.5-6 µs a dispatch, against 9-12.6 after the warm-up of a
/// hundred steps it had (docs/BENCHMARKS.md). The playground's loop runs thousands of steps.
const WARM_UP_SECONDS: f64 = 0.5;

/// Times `step` after 5 untimed runs each waited for and runs of `reps` back to back, at
/// least two and `WARM_UP_SECONDS` of them: `reps` runs each waited for, then up to
/// `PIPELINED_RUNS` times `reps` runs back to back. Runs that share a submit make a bind group
/// per use of a kernel in it the first time they run so, and the first submit after a long
/// stretch comes early (`Batch::caught_up`), which shifts the steps against the submits: the
/// warm-up runs back to back after a short stretch and after long ones, as the timed runs do,
/// so that they find every group made. With `products` timed, the shapes the first step planned
/// are timed as each of their variants after it, as the playground does after a model's first
/// step (src/tune/products.rs); not remembered: each run of the benchmark times them afresh.
pub(super) async fn time(
    gpu: &Rc<Gpu>,
    (reps, products): (usize, Products),
    mut step: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    for run in 0..5 {
        step()?;
        gpu.finished().await?;
        if run == 0 && products == Products::Timed {
            crate::tune::tune_products(gpu, &mut crate::tune::Cache::default()).await?;
        }
    }
    let warm_up = crate::clock::now();
    for run in 0.. {
        if run >= 2 && (crate::clock::now() - warm_up).as_secs_f64() >= WARM_UP_SECONDS {
            break;
        }
        for _ in 0..reps {
            step()?;
        }
        gpu.finished().await?;
    }
    // The profile is of the steps waited for: not the warm-up's, nor the product timer's trials.
    gpu.clear_profile();
    let (mut waited, mut recording) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    let mut counters = Counters::default();
    for _ in 0..reps {
        let mark = gpu.counters();
        let start = crate::clock::now();
        step()?;
        recording.push((crate::clock::now() - start).as_secs_f64());
        gpu.finished().await?;
        waited.push((crate::clock::now() - start).as_secs_f64());
        counters = gpu.counters().since(&mark);
    }
    let profile = gpu.take_profile(reps);
    let mark = gpu.counters();
    let mut pipelined = Vec::with_capacity(PIPELINED_RUNS);
    let runs_start = crate::clock::now();
    for _ in 0..PIPELINED_RUNS {
        if (crate::clock::now() - runs_start).as_secs_f64() >= PIPELINED_SECONDS {
            break;
        }
        let start = crate::clock::now();
        for _ in 0..reps {
            step()?;
        }
        gpu.finished().await?;
        pipelined.push((crate::clock::now() - start).as_secs_f64() / reps as f64);
    }
    Ok(Timing {
        waited: median(waited),
        pipelined: median(pipelined),
        recording: median(recording),
        counters,
        pipelined_counters: gpu.counters().since(&mark),
        profile,
    })
}

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `name {"ms": …, "<unit>": …, "params": …, timings and counters…}`: torch_ref.py's fields
/// (`ms` is a step waited for) and ours; when profiling, a step's kernels follow, a line each.
pub(super) fn line(
    name: &str,
    t: &Timing,
    throughput: (&str, f64),
    params: Option<usize>,
) -> String {
    let c = &t.counters;
    let mut v = serde_json::json!({"ms": significant(t.waited * 1e3), throughput.0: significant(throughput.1)});
    if let Some(p) = params {
        v["params"] = p.into();
    }
    v["pipelined_ms"] = significant(t.pipelined * 1e3).into();
    v["record_ms"] = significant(t.recording * 1e3).into();
    let per_dispatch = t.recording * 1e6 / c.dispatches.max(1) as f64;
    v["record_us_per_dispatch"] = significant(per_dispatch).into();
    v["dispatches_per_step"] = c.dispatches.into();
    v["bind_groups_created_per_step"] = c.bind_groups_created.into();
    v["submits_per_step"] = c.submits.into();
    v["buffers_created_per_step"] = c.buffers_created.into();
    v["gpu_bytes_live"] = c.bytes_live.into();
    let p = &t.pipelined_counters;
    v["param_bytes_per_step"] = c.param_bytes.into();
    v["pipelined_submits"] = p.submits.into();
    v["pipelined_param_bytes"] = p.param_bytes.into();
    v["pipelined_bind_groups_created"] = p.bind_groups_created.into();
    v["pipelined_buffers_created"] = p.buffers_created.into();
    let kernels = t.profile.as_deref().unwrap_or_default().lines();
    std::iter::once(format!("{name} {v}"))
        .chain(kernels.map(|kernel| format!("\n  {kernel}")))
        .collect()
}

/// `x` to four significant digits, so that 0.0027 TFLOPS on an emulated adapter does not print
/// as 0.003 and 1234567 tokens/s carries no false precision.
pub(super) fn significant(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(3 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Uniform values in [-1, 1) from a seeded generator: inputs whose values do not matter.
pub(super) fn random(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::significant;

    #[test]
    fn figures_keep_four_significant_digits() {
        assert_eq!(significant(0.0027123), 0.002712);
        assert_eq!(significant(182.4234), 182.4);
        assert_eq!(significant(1234567.0), 1235000.0);
        assert_eq!(significant(0.0), 0.0);
    }
}
