//! The compute workloads: a square matmul, and training steps of the benchmark's models on the
//! GPU and on the CPU backend.

use super::timing::{line, median, random, significant, time, Products};
use super::workload_optimizer;
use crate::nn::{Init, KeptInputs};
use crate::optim::Optimizer;
use crate::train::{ModelConfig, Net};
use crate::{Device, Gpu, Result, Tensor};
use std::rc::Rc;

pub(super) async fn matmul(
    gpu: &Rc<Gpu>,
    name: &str,
    n: usize,
    reps: (usize, Products),
) -> Result<String> {
    let d = Device::Gpu(gpu.clone());
    let a = Tensor::from_vec(random(n * n, 1), &[n, n], &d)?;
    let b = Tensor::from_vec(random(n * n, 2), &[n, n], &d)?;
    let t = time(gpu, (reps.0.min(20), reps.1), || a.matmul(&b).map(drop)).await?;
    let tflops = 2.0 * (n as f64).powi(3) / t.waited / 1e12;
    Ok(line(name, &t, ("tflops", tflops), None))
}

/// A model, its optimizer and one batch, ready to take training steps.
struct Workload {
    net: Net,
    params: Vec<(String, Tensor)>,
    optimizer: Optimizer,
    x: Tensor,
    y: Tensor,
    /// Items per step and their unit, as torch_ref.py names it.
    items: usize,
    unit: &'static str,
}

impl Workload {
    /// The workload of `model` and `batch` on `d`, its GPT's blocks run again in backward
    /// where `recompute`; as a session would, a LoRA base is held in f16 and recomputed
    /// blocks keep their inputs in f16 where products run in f16.
    fn new((model, batch): &(ModelConfig, usize), recompute: bool, d: &Device) -> Result<Workload> {
        let batch = *batch;
        let mut init = Init::new(0, d);
        init.hold_frozen_in_f16(matches!(d, Device::Gpu(g) if g.frozen_f16()));
        let mut net = Net::new(model, &mut init)?;
        if let (Net::Gpt(gpt), true) = (&mut net, recompute) {
            gpt.set_recompute(Some(KeptInputs::for_device(d)));
        }
        // Only what trains (with LoRA, the adapters).
        let params: Vec<_> = net
            .parameters()
            .into_iter()
            .filter(|(_, p)| p.requires_grad())
            .collect();
        let optimizer = Optimizer::for_device(workload_optimizer(model), &params, d)?;
        let (x, y, items, unit) = match model {
            ModelConfig::Gpt(g) => {
                let tokens: Vec<u32> = (0..batch * g.context)
                    .map(|i| (i * 7919 % g.vocab) as u32)
                    .collect();
                let next = tokens.iter().map(|t| (t + 1) % g.vocab as u32).collect();
                let x = Tensor::from_u32(tokens, &[batch, g.context], d)?;
                let y = Tensor::from_u32(next, &[batch * g.context], d)?;
                (x, y, batch * g.context, "tokens_per_s")
            }
            _ => {
                let x = Tensor::from_vec(random(batch * 784, 3), &[batch, 784], d)?;
                let labels = (0..batch).map(|i| (i % 10) as u32).collect();
                let y = Tensor::from_u32(labels, &[batch], d)?;
                (x, y, batch, "samples_per_s")
            }
        };
        Ok(Workload {
            net,
            params,
            optimizer,
            x,
            y,
            items,
            unit,
        })
    }

    /// One training step: forward, cross-entropy, backward, optimizer update (AdamW for the
    /// GPTs, Adam otherwise, as torch_ref.py).
    fn step(&mut self) -> Result<()> {
        self.optimizer.forward_begins();
        let loss = self.net.loss(&self.x, &self.y, None)?;
        let grads = self.optimizer.backward(&loss)?;
        self.optimizer.step(&self.params, &grads)
    }

    fn parameter_count(&self) -> usize {
        self.params.iter().map(|(_, p)| p.numel()).sum()
    }
}

/// LoRA's layer at GPT-2's qkv size (4,096 rows of 768 into 2,304, rank 8), forward and
/// backward with the base frozen: the fused form (`lora_linear`) or the unfused one.
pub(super) async fn lora_layer(
    gpu: &Rc<Gpu>,
    name: &str,
    fused: bool,
    reps: (usize, Products),
) -> Result<String> {
    let d = Device::Gpu(gpu.clone());
    let (n, inputs, outputs, rank) = (4096, 768, 2304, 8);
    let tensor =
        |shape: &[usize], seed| Tensor::from_vec(random(shape.iter().product(), seed), shape, &d);
    let x = tensor(&[n, inputs], 1)?.with_grad();
    let (w, b) = (tensor(&[outputs, inputs], 2)?, tensor(&[outputs], 3)?);
    let a = tensor(&[rank, inputs], 4)?.with_grad();
    let bb = tensor(&[outputs, rank], 5)?.with_grad();
    let t = time(gpu, reps, || {
        let y = match fused {
            true => x.lora_linear(&w, Some(&b), (&a, &bb), 2.0)?,
            false => x.lora_linear_unfused(&w, Some(&b), (&a, &bb), 2.0)?,
        };
        y.sum_all()?.backward().map(drop)
    })
    .await?;
    let flops = 2.0 * (n * inputs * outputs) as f64 * 2.0;
    Ok(line(name, &t, ("tflops", flops / t.waited / 1e12), None))
}

/// The forms of norm timed alone: RMSNorm's fused kernels, RMSNorm composed of elementwise ops
/// and a mean (what a framework without the kernel runs), and LayerNorm's fused kernels.
#[derive(Debug, Clone, Copy)]
pub(super) enum NormForm {
    RmsFused,
    RmsUnfused,
    Layer,
}

impl NormForm {
    pub(super) const ALL: [NormForm; 3] =
        [NormForm::RmsFused, NormForm::RmsUnfused, NormForm::Layer];

    pub(super) fn name(self) -> &'static str {
        match self {
            NormForm::RmsFused => "rmsnorm_fused",
            NormForm::RmsUnfused => "rmsnorm_unfused",
            NormForm::Layer => "layernorm",
        }
    }
}

/// A norm over GPT-2's activations (4,096 rows of 768), forward and backward with the input's
/// and the weight's gradients. Its line gives the bandwidth of the least traffic such a step
/// needs: x read twice and y written, dy read and dx written (5 passes over the rows).
pub(super) async fn norm(
    gpu: &Rc<Gpu>,
    name: &str,
    form: NormForm,
    reps: (usize, Products),
) -> Result<String> {
    let d = Device::Gpu(gpu.clone());
    let (rows, width, eps) = (4096, 768, 1e-5);
    let x = Tensor::from_vec(random(rows * width, 1), &[rows, width], &d)?.with_grad();
    let w = Tensor::from_vec(random(width, 2), &[width], &d)?.with_grad();
    let b = Tensor::from_vec(random(width, 3), &[width], &d)?.with_grad();
    let t = time(gpu, reps, || {
        let y = match form {
            NormForm::RmsFused => x.rmsnorm(&w, eps)?,
            NormForm::RmsUnfused => {
                let mean_square = x.mul(&x)?.mean(-1, true)?;
                x.mul(&mean_square.add_scalar(eps)?.sqrt()?.reciprocal()?)?
                    .mul(&w)?
            }
            NormForm::Layer => x.layernorm(&w, &b, eps)?,
        };
        y.sum_all()?.backward().map(drop)
    })
    .await?;
    let bytes = 5.0 * (rows * width * 4) as f64;
    Ok(line(name, &t, ("gb_per_s", bytes / t.waited / 1e9), None))
}

/// A training workload on the GPU; returns its line and its median step in milliseconds.
pub(super) async fn train(
    gpu: &Rc<Gpu>,
    name: &str,
    model: &(ModelConfig, usize),
    recompute: bool,
    reps: (usize, Products),
) -> Result<(String, f64)> {
    let mut w = Workload::new(model, recompute, &Device::Gpu(gpu.clone()))?;
    // Each step ends as the session's `train_step` does (submitted, or a short one left for
    // the next steps to join): steps run back to back (the pipelined figure) then go to the GPU
    // as they do in the playground's loop.
    let t = time(gpu, reps, || {
        w.step()?;
        gpu.step_recorded();
        Ok(())
    })
    .await?;
    let throughput = (w.unit, w.items as f64 / t.waited);
    let line = line(name, &t, throughput, Some(w.parameter_count()));
    Ok((line, t.waited * 1e3))
}

/// The same workload on the CPU backend: the median of `reps` steps after one untimed step,
/// with the GPU's median step (`gpu_ms`, when it was timed) and how many times faster it was.
pub(super) fn train_cpu(
    name: &str,
    model: &(ModelConfig, usize),
    reps: usize,
    gpu_ms: Option<f64>,
) -> Result<String> {
    let mut w = Workload::new(model, false, &Device::Cpu)?;
    w.step()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = crate::clock::now();
        w.step()?;
        times.push((crate::clock::now() - start).as_secs_f64());
    }
    let s = median(times);
    let mut v = serde_json::json!({
        "ms": significant(s * 1e3),
        w.unit: significant(w.items as f64 / s),
        "params": w.parameter_count(),
    });
    if let Some(gpu_ms) = gpu_ms {
        v["gpu_ms"] = significant(gpu_ms).into();
        v["gpu_speedup"] = significant(s * 1e3 / gpu_ms).into();
    }
    Ok(format!("{name} {v}"))
}
