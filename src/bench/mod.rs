//! The benchmark workloads of BENCHMARKS.md, shared by `webgrad bench` (native) and the page's
//! bench mode (`?bench=1`): each result is one line in the format of torch_ref.py, carrying the
//! counters of one timed step.

mod timing;
mod train;
mod transfer;

use crate::nn::{Activation, CnnConfig, GptConfig, LoraConfig, MlpConfig, Norm, Preset};
use crate::optim::{DecayScope, OptimizerConfig, RuleKind, Schedule};
use crate::train::ModelConfig;
use crate::{Gpu, Result};
use std::collections::HashMap;
use std::rc::Rc;

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct BenchOptions {
    /// Fewer timed steps, and no 4096³ matmul.
    pub quick: bool,
    /// Only the workloads whose names start with one of these (all that run by default when
    /// empty). The workloads that do not run by default run only when named here.
    pub only: Vec<String>,
    /// A suffix for every name (e.g. "_unchecked" when shaders run without bounds checks).
    pub suffix: String,
    /// Time each kernel with timestamp queries (the page asks for it before making its GPU).
    pub profile: bool,
}

/// The training workloads, in the order they run: mlp, cnn and the GPTs of BENCHMARKS.md.
const TRAINING: [&str; 4] = [
    "mlp_mnist_b128",
    "cnn_mnist_b128",
    "gpt_small_b32",
    "gpt_nanochar_b64",
];

/// What a workload does.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Matmul(usize),
    Train,
    /// GPT-2 124M with batch 4: too large to run unasked (500 MB of weights and Adam moments,
    /// 800 MB of logits), it runs with `--only gpt2`.
    Gpt2,
    /// LoRA's layer alone, fused or not (see train::lora_layer); runs with `--only lora`.
    LoraLayer {
        fused: bool,
    },
    Upload(usize),
    Readback(usize),
    Alloc {
        fresh: bool,
    },
    /// A training workload on the CPU backend (the name's tail), with the GPU's time beside it
    /// when that ran first. Seconds a step for the GPTs: runs with `--only cpu`.
    Cpu(&'static str),
}

struct Workload {
    name: String,
    kind: Kind,
    by_default: bool,
}

/// Every workload, in the order they run.
fn workloads() -> Vec<Workload> {
    let w = |name: String, kind, by_default| Workload {
        name,
        kind,
        by_default,
    };
    let mut all: Vec<Workload> = [1024, 2048, 4096]
        .map(|n| w(format!("matmul_{n}"), Kind::Matmul(n), true))
        .into();
    all.extend(TRAINING.map(|t| w(t.into(), Kind::Train, true)));
    all.push(w("gpt2_124m_b4".into(), Kind::Gpt2, false));
    // LoRA fine-tuning of gpt_small and nanochar (adapters of rank 8 on the projections), and
    // its layer alone.
    for t in ["gpt_small_lora_b32", "gpt_nanochar_lora_b64"] {
        all.push(w(t.into(), Kind::Train, false));
    }
    for (how, fused) in [("fused", true), ("unfused", false)] {
        all.push(w(
            format!("lora_layer_{how}"),
            Kind::LoraLayer { fused },
            false,
        ));
    }
    for (label, bytes) in transfer::SIZES {
        all.push(w(format!("upload_{label}"), Kind::Upload(bytes), true));
    }
    for (label, bytes) in transfer::SIZES {
        all.push(w(format!("readback_{label}"), Kind::Readback(bytes), true));
    }
    for (how, fresh) in [("pooled", false), ("fresh", true)] {
        let name = format!("alloc_{}_{how}", transfer::ALLOC_BYTES.0);
        all.push(w(name, Kind::Alloc { fresh }, true));
    }
    all.extend(TRAINING.map(|t| w(format!("cpu_{t}"), Kind::Cpu(t), false)));
    all
}

/// Every workload's name, in the order they run.
pub fn names() -> Vec<String> {
    workloads().into_iter().map(|w| w.name).collect()
}

/// Runs the chosen workloads on `gpu`, handing each finished line to `emit`.
pub async fn run(
    gpu: &Rc<Gpu>,
    options: &BenchOptions,
    mut emit: impl FnMut(String),
) -> Result<()> {
    let named = |name: &str| options.only.iter().any(|o| name.starts_with(o.as_str()));
    let reps = if options.quick { 30 } else { 50 };
    // Each training workload's GPU step in ms, for the CPU backend's lines.
    let mut gpu_ms: HashMap<&str, f64> = HashMap::new();
    for w in workloads() {
        let wanted = named(&w.name) || (options.only.is_empty() && w.by_default);
        if !wanted || (options.quick && w.name == "matmul_4096") {
            continue;
        }
        let label = format!("{}{}", w.name, options.suffix);
        let line = match w.kind {
            Kind::Matmul(n) => train::matmul(gpu, &label, n, reps).await?,
            Kind::Train | Kind::Gpt2 => {
                let model = workload_model(&w.name);
                let reps = if matches!(w.kind, Kind::Gpt2) {
                    20
                } else {
                    reps
                };
                let (line, ms) = train::train(gpu, &label, &model, reps).await?;
                if let Some(t) = TRAINING.iter().find(|t| **t == w.name) {
                    gpu_ms.insert(t, ms);
                }
                line
            }
            Kind::LoraLayer { fused } => train::lora_layer(gpu, &label, fused, reps).await?,
            Kind::Upload(bytes) => format!("{label} {}", transfer::upload(gpu, bytes, reps).await?),
            Kind::Readback(bytes) => {
                format!("{label} {}", transfer::readback(gpu, bytes, reps).await?)
            }
            Kind::Alloc { fresh } => {
                let bytes = transfer::ALLOC_BYTES.1;
                format!("{label} {}", transfer::allocation(gpu, bytes, fresh, reps)?)
            }
            Kind::Cpu(t) => {
                train::train_cpu(&label, &workload_model(t), 3, gpu_ms.get(t).copied())?
            }
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

/// The model and batch of a training workload, by its name.
pub fn workload_model(name: &str) -> (ModelConfig, usize) {
    let gpt = |preset| ModelConfig::Gpt(GptConfig::preset(preset, 65));
    let lora = |preset| {
        let mut g = GptConfig::preset(preset, 65);
        g.lora = Some(LoraConfig {
            rank: 8,
            alpha: 16.0,
        });
        ModelConfig::Gpt(g)
    };
    match name {
        "gpt_small_lora_b32" => (lora(Preset::Small), 32),
        "gpt_nanochar_lora_b64" => (lora(Preset::Nanochar), 64),
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
        "gpt2_124m_b4" => (
            ModelConfig::Gpt(GptConfig {
                vocab: 50257,
                context: 1024,
                layers: 12,
                heads: 12,
                width: 768,
                dropout: 0.0,
                norm: Norm::Layernorm,
                lora: None,
            }),
            4,
        ),
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
