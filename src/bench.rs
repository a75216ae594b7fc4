//! The benchmark workloads of BENCHMARKS.md, shared by `webgrad bench` (native) and the page's
//! bench mode (`?bench=1`): each result is one line in the format of torch_ref.py, carrying the
//! counters of one timed step.

use crate::nn::{Activation, CnnConfig, GptConfig, Init, MlpConfig, Preset};
use crate::optim::{DecayScope, Optimizer, OptimizerConfig, RuleKind, Schedule};
use crate::train::{ModelConfig, Net};
use crate::{Counters, Device, Gpu, Result, Tensor};
use std::rc::Rc;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct BenchOptions {
    /// Fewer timed steps, and no 4096³ matmul.
    pub quick: bool,
    /// Only the workloads whose names start with one of these (all when empty).
    pub only: Vec<String>,
    /// A suffix for every name (e.g. "_unchecked" when shaders run without bounds checks).
    pub suffix: String,
    /// Time each kernel with timestamp queries (the page asks for it before making its GPU).
    pub profile: bool,
}

/// Every workload name, in the order they run.
pub const WORKLOADS: [&str; 7] = [
    "matmul_1024",
    "matmul_2048",
    "matmul_4096",
    "mlp_mnist_b128",
    "cnn_mnist_b128",
    "gpt_small_b32",
    "gpt_nanochar_b64",
];

/// Runs the chosen workloads on `gpu`, handing each finished line to `emit`.
pub async fn run(
    gpu: &Rc<Gpu>,
    options: &BenchOptions,
    mut emit: impl FnMut(String),
) -> Result<()> {
    let wanted = |name: &str| {
        options.only.is_empty() || options.only.iter().any(|o| name.starts_with(o.as_str()))
    };
    let reps = if options.quick { 30 } else { 50 };
    for name in WORKLOADS {
        if !wanted(name) || (options.quick && name == "matmul_4096") {
            continue;
        }
        let label = format!("{name}{}", options.suffix);
        let line = match name.strip_prefix("matmul_") {
            Some(n) => matmul(gpu, &label, n.parse().expect("a size"), reps).await?,
            None => train(gpu, &label, workload_model(name), reps).await?,
        };
        emit(line);
        // With a profile (WEBGRAD_PROFILE=1, or the page's `&profile=1`), this workload's
        // kernels, slowest first.
        for kernel in gpu.take_profile().unwrap_or_default().lines() {
            emit(format!("  {kernel}"));
        }
    }
    Ok(())
}

/// The model and batch of a training workload (by its name in `WORKLOADS`).
pub fn workload_model(name: &str) -> (ModelConfig, usize) {
    let gpt = |preset| ModelConfig::Gpt(GptConfig::preset(preset, 65));
    match name {
        "mlp_mnist_b128" => (
            ModelConfig::Mlp(MlpConfig {
                inputs: 784,
                outputs: 10,
                depth: 2,
                width: 512,
                activation: Activation::Relu,
            }),
            128,
        ),
        "cnn_mnist_b128" => (ModelConfig::Cnn(CnnConfig::default()), 128),
        "gpt_small_b32" => (gpt(Preset::Small), 32),
        _ => (gpt(Preset::Nanochar), 64),
    }
}

/// The optimizer of a training workload: AdamW for the GPTs, Adam otherwise, as torch_ref.py.
pub fn workload_optimizer(model: &ModelConfig) -> OptimizerConfig {
    let gpt = matches!(model, ModelConfig::Gpt(_));
    OptimizerConfig {
        rule: if gpt { RuleKind::AdamW } else { RuleKind::Adam }.defaults(),
        lr: 1e-3,
        weight_decay: 0.0,
        decay: DecayScope::All,
        clip: None,
        schedule: Schedule::Constant,
    }
}

/// What one workload's timing measured.
struct Timing {
    /// Median seconds of a step waited for to its end.
    waited: f64,
    /// Seconds per step when `reps` steps are recorded back to back with one wait at the end,
    /// as the playground's loop runs them.
    pipelined: f64,
    /// Median CPU seconds spent recording one step (building the graph and its dispatches),
    /// before its last submit and the wait.
    recording: f64,
    /// The counters of the last waited step.
    counters: Counters,
}

/// Times `step` after 5 untimed runs: `reps` runs each waited for, then `reps` runs back to
/// back.
async fn time(gpu: &Rc<Gpu>, reps: usize, mut step: impl FnMut() -> Result<()>) -> Result<Timing> {
    for _ in 0..5 {
        step()?;
        gpu.finished().await?;
    }
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
    let start = crate::clock::now();
    for _ in 0..reps {
        step()?;
    }
    gpu.finished().await?;
    let pipelined = (crate::clock::now() - start).as_secs_f64() / reps as f64;
    Ok(Timing {
        waited: median(waited),
        pipelined,
        recording: median(recording),
        counters,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `name {"ms": …, "<unit>": …, "params": …, timings and counters…}`: torch_ref.py's fields
/// (`ms` is a step waited for) and ours.
fn line(name: &str, t: &Timing, throughput: (&str, f64), params: Option<usize>) -> String {
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
    format!("{name} {v}")
}

/// `x` to four significant digits, so that 0.0027 TFLOPS on an emulated adapter does not print
/// as 0.003 and 1234567 tokens/s carries no false precision.
fn significant(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(3 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Uniform values in [-1, 1) from a seeded generator: inputs whose values do not matter.
fn random(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
}

async fn matmul(gpu: &Rc<Gpu>, name: &str, n: usize, reps: usize) -> Result<String> {
    let d = Device::Gpu(gpu.clone());
    let a = Tensor::from_vec(random(n * n, 1), &[n, n], &d)?;
    let b = Tensor::from_vec(random(n * n, 2), &[n, n], &d)?;
    let t = time(gpu, reps.min(20), || a.matmul(&b).map(drop)).await?;
    let tflops = 2.0 * (n as f64).powi(3) / t.waited / 1e12;
    Ok(line(name, &t, ("tflops", tflops), None))
}

/// One training step per run: forward, cross-entropy, backward, optimizer update (AdamW for
/// the GPTs, Adam otherwise, as torch_ref.py).
async fn train(
    gpu: &Rc<Gpu>,
    name: &str,
    (model, batch): (ModelConfig, usize),
    reps: usize,
) -> Result<String> {
    let d = Device::Gpu(gpu.clone());
    let net = Net::new(&model, &mut Init::new(0, &d))?;
    let params = net.parameters();
    let mut optimizer = Optimizer::new(workload_optimizer(&model), &params)?;
    let (x, y, items, unit) = match &model {
        ModelConfig::Gpt(g) => {
            let tokens: Vec<u32> = (0..batch * g.context)
                .map(|i| (i * 7919 % g.vocab) as u32)
                .collect();
            let next = tokens.iter().map(|t| (t + 1) % g.vocab as u32).collect();
            let x = Tensor::from_u32(tokens, &[batch, g.context], &d)?;
            let y = Tensor::from_u32(next, &[batch * g.context], &d)?;
            (x, y, batch * g.context, "tokens_per_s")
        }
        _ => {
            let x = Tensor::from_vec(random(batch * 784, 3), &[batch, 784], &d)?;
            let y = Tensor::from_u32((0..batch).map(|i| (i % 10) as u32).collect(), &[batch], &d)?;
            (x, y, batch, "samples_per_s")
        }
    };
    let t = time(gpu, reps, || {
        let loss = net.forward(&x)?.cross_entropy(&y)?;
        let grads = loss.backward()?;
        optimizer.step(&params, &grads)
    })
    .await?;
    let count = params.iter().map(|(_, p)| p.numel()).sum();
    Ok(line(name, &t, (unit, items as f64 / t.waited), Some(count)))
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
