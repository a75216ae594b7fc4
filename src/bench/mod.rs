//! The benchmark workloads of BENCHMARKS.md, shared by `webgrad bench` (native) and the page's
//! bench mode (`?bench=1`): each result is one line in the format of torch_ref.py, carrying the
//! counters of one timed step.

pub mod check;
pub mod check_attention;
mod timing;
pub use timing::Products;
mod train;
mod transfer;

use crate::gpu::{Precision, PrecisionChoice};
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
    /// Whether each workload's product shapes are timed before it (timing.rs).
    pub products: Products,
}

/// Sets the precision a bench runs in on `gpu` (an error where f16 cannot be had): its f16
/// workloads are named `_f16`, so that their lines stand beside the f32 ones.
pub fn set_precision(
    gpu: &Gpu,
    asked: Precision,
    options: &mut BenchOptions,
) -> Result<PrecisionChoice> {
    let choice = gpu.set_precision(asked)?;
    if choice.f16() {
        options.suffix += "_f16";
    }
    Ok(choice)
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
    /// GPT-2 124M with batch 4, and fine-tuned with LoRA: too large to run unasked (500 MB of
    /// weights and Adam moments, 800 MB of logits), they run with `--only gpt2`.
    Gpt2,
    /// LoRA's layer alone, fused or not (see train::lora_layer).
    LoraLayer {
        fused: bool,
    },
    /// A norm over GPT-2's activations alone (see train::norm).
    Norm(train::NormForm),
    Upload(usize),
    Readback(usize),
    Alloc {
        fresh: bool,
    },
    /// A training workload on the CPU backend (the name's tail), with the GPU's time beside it
    /// when that ran first. Seconds a step for the GPTs.
    Cpu(&'static str),
}

struct Workload {
    name: String,
    kind: Kind,
    /// None for a workload that runs unasked; else the group ("gpt2", "lora", "cpu") that an
    /// `--only` entry must start with to run it, so that `--only gpt` does not start GPT-2.
    opt_in: Option<&'static str>,
}

/// Every workload, in the order they run.
fn workloads() -> Vec<Workload> {
    let w = |name: String, kind, opt_in| Workload { name, kind, opt_in };
    let mut all: Vec<Workload> = [1024, 2048, 4096]
        .map(|n| w(format!("matmul_{n}"), Kind::Matmul(n), None))
        .into();
    all.extend(TRAINING.map(|t| w(t.into(), Kind::Train, None)));
    all.push(w("gpt2_124m_b4".into(), Kind::Gpt2, Some("gpt2")));
    all.push(w(GPT2_LORA.into(), Kind::Gpt2, Some("gpt2")));
    // LoRA fine-tuning of gpt_small and nanochar (adapters of rank 8 on the projections), and
    // its layer alone.
    for t in ["lora_gpt_small_b32", "lora_gpt_nanochar_b64"] {
        all.push(w(t.into(), Kind::Train, Some("lora")));
    }
    for (how, fused) in [("fused", true), ("unfused", false)] {
        let kind = Kind::LoraLayer { fused };
        all.push(w(format!("lora_layer_{how}"), kind, Some("lora")));
    }
    for form in train::NormForm::ALL {
        all.push(w(format!("norm_{}", form.name()), Kind::Norm(form), None));
    }
    for (label, bytes) in transfer::SIZES {
        all.push(w(format!("upload_{label}"), Kind::Upload(bytes), None));
    }
    for (label, bytes) in transfer::SIZES {
        all.push(w(format!("readback_{label}"), Kind::Readback(bytes), None));
    }
    for (how, fresh) in [("pooled", false), ("fresh", true)] {
        let name = format!("alloc_{}_{how}", transfer::ALLOC_BYTES.0);
        all.push(w(name, Kind::Alloc { fresh }, None));
    }
    all.extend(TRAINING.map(|t| w(format!("cpu_{t}"), Kind::Cpu(t), Some("cpu"))));
    all
}

/// The workloads `options` asks for, in the order they run.
fn chosen(options: &BenchOptions) -> Vec<Workload> {
    let named = |name: &str, group: &str| {
        let asked = |o: &String| name.starts_with(o.as_str()) && o.starts_with(group);
        options.only.iter().any(asked)
    };
    let wanted = |w: &Workload| match w.opt_in {
        None => options.only.is_empty() || named(&w.name, ""),
        Some(group) => named(&w.name, group),
    };
    workloads()
        .into_iter()
        .filter(|w| wanted(w) && !(options.quick && w.name == "matmul_4096"))
        .collect()
}

/// The first name of `only` that names no workload (the start of none), if any: asked for, it
/// would run nothing.
pub fn unknown(only: &[String]) -> Option<String> {
    let names = names();
    only.iter()
        .find(|o| !names.iter().any(|w| w.starts_with(o.as_str())))
        .cloned()
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
    let reps = (if options.quick { 30 } else { 50 }, options.products);
    // Each training workload's GPU step in ms, for the CPU backend's lines.
    let mut gpu_ms: HashMap<&str, f64> = HashMap::new();
    emit(check::products_line(gpu).await?);
    emit(check_attention::attention_line(gpu).await?);
    for w in chosen(options) {
        let label = format!("{}{}", w.name, options.suffix);
        let line = match w.kind {
            Kind::Matmul(n) => train::matmul(gpu, &label, n, reps).await?,
            Kind::Train | Kind::Gpt2 => {
                let model = workload_model(&w.name);
                let reps = if matches!(w.kind, Kind::Gpt2) {
                    (20, reps.1)
                } else {
                    reps
                };
                let recompute = workload_recomputes(&w.name);
                let (line, ms) = train::train(gpu, &label, &model, recompute, reps).await?;
                if let Some(t) = TRAINING.iter().find(|t| **t == w.name) {
                    gpu_ms.insert(t, ms);
                }
                line
            }
            Kind::LoraLayer { fused } => train::lora_layer(gpu, &label, fused, reps).await?,
            Kind::Norm(form) => train::norm(gpu, &label, form, reps).await?,
            Kind::Upload(bytes) => transfer::upload(gpu, &label, bytes, reps.0).await?,
            Kind::Readback(bytes) => transfer::readback(gpu, &label, bytes, reps.0).await?,
            Kind::Alloc { fresh } => {
                let bytes = transfer::ALLOC_BYTES.1;
                transfer::allocation(gpu, &label, (bytes, fresh), reps.0)?
            }
            Kind::Cpu(t) => {
                train::train_cpu(&label, &workload_model(t), 3, gpu_ms.get(t).copied())?
            }
        };
        emit(line);
    }
    Ok(())
}

/// GPT-2 124M fine-tuned as the page does it: LoRA of rank 8 on its projections, 8 windows of
/// 256 tokens, its blocks run again in backward, its base in f16 under mixed precision.
const GPT2_LORA: &str = "gpt2_lora_b8";

/// Whether a training workload's GPT runs its blocks again in backward (`Gpt::set_recompute`).
pub fn workload_recomputes(name: &str) -> bool {
    name == GPT2_LORA
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
        "lora_gpt_small_b32" => (lora(Preset::Small), 32),
        "lora_gpt_nanochar_b64" => (lora(Preset::Nanochar), 64),
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
        "gpt2_124m_b4" => (ModelConfig::Gpt(gpt2(1024, None)), 4),
        // The positions past the window are never read: a context of 256 costs the same.
        GPT2_LORA => (
            ModelConfig::Gpt(gpt2(
                256,
                Some(LoraConfig {
                    rank: 8,
                    alpha: 8.0,
                }),
            )),
            8,
        ),
        _ => (gpt(Preset::Nanochar), 64),
    }
}

/// GPT-2 124M's shape over `context` positions, with `lora`.
fn gpt2(context: usize, lora: Option<LoraConfig>) -> GptConfig {
    GptConfig {
        vocab: 50257,
        context,
        layers: 12,
        heads: 12,
        width: 768,
        dropout: 0.0,
        norm: Norm::Layernorm,
        lora,
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

#[cfg(test)]
mod tests {
    use super::{chosen, BenchOptions};

    fn names(only: &[&str], quick: bool) -> Vec<String> {
        let only = only.iter().map(|o| o.to_string()).collect();
        let options = BenchOptions {
            quick,
            only,
            ..BenchOptions::default()
        };
        chosen(&options).into_iter().map(|w| w.name).collect()
    }

    #[test]
    fn groups_that_do_not_run_unasked_run_only_when_named() {
        let all = names(&[], false);
        assert!(all.contains(&"matmul_4096".to_string()) && all.contains(&"upload_64MiB".into()));
        assert!(!all
            .iter()
            .any(|n| n.starts_with("gpt2") || n.starts_with("lora") || n.starts_with("cpu")));
        assert!(!names(&[], true).contains(&"matmul_4096".to_string()));
        assert_eq!(
            names(&["gpt"], false),
            ["gpt_small_b32", "gpt_nanochar_b64"]
        );
        assert_eq!(names(&["gpt2"], false), ["gpt2_124m_b4", "gpt2_lora_b8"]);
        assert_eq!(names(&["gpt2_lora"], false), ["gpt2_lora_b8"]);
        assert_eq!(names(&["lora"], false).len(), 4);
        assert_eq!(
            names(&["cpu_mlp", "mlp"], false),
            ["mlp_mnist_b128", "cpu_mlp_mnist_b128"]
        );
    }
}
