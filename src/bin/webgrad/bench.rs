//! `webgrad bench`: the workloads of BENCHMARKS.md, printed in the format of torch_ref.py, each
//! with the counters of one step after warm-up.

use crate::args::Args;
use std::time::Instant;
use webgrad::nn::{CnnConfig, GptConfig, Init, MlpConfig};
use webgrad::optim::{Optimizer, OptimizerConfig, Rule, Schedule};
use webgrad::train::{ModelConfig, Net};
use webgrad::{Device, Gpu, Tensor};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `step` (which must leave its work submitted): `warm` untimed runs, then `reps` runs
/// each waited for to the end. Returns the median seconds and the counters of the last run.
fn time(
    gpu: &Gpu,
    warm: usize,
    reps: usize,
    mut step: impl FnMut() -> Result<(), String>,
) -> Result<(f64, webgrad::Counters), String> {
    for _ in 0..warm {
        step()?;
        gpu.finish();
    }
    let mut times = Vec::new();
    let mut counters = webgrad::Counters::default();
    for _ in 0..reps {
        let mark = gpu.counters();
        let t = Instant::now();
        step()?;
        gpu.finish();
        times.push(t.elapsed().as_secs_f64());
        counters = gpu.counters().since(&mark);
    }
    Ok((median(times), counters))
}

fn line(
    name: &str,
    ms: f64,
    throughput: (&str, f64),
    params: Option<usize>,
    c: &webgrad::Counters,
) {
    let mut v = serde_json::json!({"ms": (ms * 1000.0).round() / 1000.0, throughput.0: (throughput.1 * 1000.0).round() / 1000.0});
    if let Some(p) = params {
        v["params"] = p.into();
    }
    v["dispatches_per_step"] = c.dispatches.into();
    v["submits_per_step"] = c.submits.into();
    v["buffers_created_per_step"] = c.buffers_created.into();
    v["gpu_bytes_live"] = c.bytes_live.into();
    println!("{name} {v}");
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

fn matmul(gpu: &std::rc::Rc<Gpu>, n: usize, suffix: &str) -> Result<(), String> {
    let d = Device::Gpu(gpu.clone());
    let e = |e: webgrad::Error| e.to_string();
    let a = Tensor::from_vec(random(n * n, 1), &[n, n], &d).map_err(e)?;
    let b = Tensor::from_vec(random(n * n, 2), &[n, n], &d).map_err(e)?;
    let (t, c) = time(gpu, 5, 20, || {
        a.matmul(&b).map_err(e)?;
        gpu.flush();
        Ok(())
    })?;
    line(
        &format!("matmul_{n}{suffix}"),
        t * 1e3,
        ("tflops", 2.0 * (n as f64).powi(3) / t / 1e12),
        None,
        &c,
    );
    Ok(())
}

/// One training workload: model, batch, optimizer; items per step and their unit.
fn train(
    gpu: &std::rc::Rc<Gpu>,
    name: &str,
    model: ModelConfig,
    batch: usize,
    reps: usize,
) -> Result<(), String> {
    let d = Device::Gpu(gpu.clone());
    let e = |e: webgrad::Error| e.to_string();
    let net = Net::new(&model, &mut Init::new(0, &d)).map_err(e)?;
    let params = net.parameters();
    let gpt = matches!(model, ModelConfig::Gpt(_));
    let rule = Rule::parse(if gpt { "adamw" } else { "adam" }).expect("known rule");
    let config = OptimizerConfig {
        rule,
        lr: 1e-3,
        weight_decay: 0.0,
        clip: None,
        schedule: Schedule::Constant,
    };
    let mut optimizer = Optimizer::new(config, &params).map_err(e)?;
    let (x, y, items, unit) = match &model {
        ModelConfig::Gpt(g) => {
            let tokens = (0..batch * g.context)
                .map(|i| (i * 7919 % g.vocab) as u32)
                .collect::<Vec<_>>();
            let x = Tensor::from_u32(tokens.clone(), &[batch, g.context], &d).map_err(e)?;
            let y = Tensor::from_u32(
                tokens.iter().map(|t| (t + 1) % g.vocab as u32).collect(),
                &[batch * g.context],
                &d,
            )
            .map_err(e)?;
            (x, y, batch * g.context, "tokens_per_s")
        }
        _ => {
            let x = Tensor::from_vec(random(batch * 784, 3), &[batch, 784], &d).map_err(e)?;
            let y = Tensor::from_u32((0..batch).map(|i| (i % 10) as u32).collect(), &[batch], &d)
                .map_err(e)?;
            (x, y, batch, "samples_per_s")
        }
    };
    let (t, c) = time(gpu, 5, reps, || {
        let loss = net.forward(&x).map_err(e)?.cross_entropy(&y).map_err(e)?;
        let grads = loss.backward().map_err(e)?;
        optimizer.step(&params, &grads).map_err(e)?;
        gpu.flush();
        Ok(())
    })?;
    let count = params.iter().map(|(_, p)| p.numel()).sum();
    line(name, t * 1e3, (unit, items as f64 / t), Some(count), &c);
    Ok(())
}

pub fn bench(raw: &[String]) -> Result<(), String> {
    let quick = raw.iter().any(|a| a == "--quick");
    let rest: Vec<String> = raw.iter().filter(|a| *a != "--quick").cloned().collect();
    let a = Args::parse(&rest, &["only"])?;
    let only = a.text("only").map(str::to_string);
    let wanted = |name: &str| only.as_deref().is_none_or(|o| name.starts_with(o));
    let gpu = pollster::block_on(Gpu::new()).map_err(|e| e.to_string())?;
    println!(
        "device: {} ({:?})",
        gpu.adapter_name(),
        gpu.adapter_info().backend
    );
    let suffix = if std::env::var("WEBGRAD_UNCHECKED").is_ok() {
        "_unchecked"
    } else {
        ""
    };
    let sizes: &[usize] = if quick {
        &[1024, 2048]
    } else {
        &[1024, 2048, 4096]
    };
    for &n in sizes {
        if wanted(&format!("matmul_{n}")) {
            matmul(&gpu, n, suffix)?;
        }
    }
    let reps = if quick { 20 } else { 50 };
    let workloads: Vec<(&str, ModelConfig, usize)> = vec![
        (
            "mlp_mnist_b128",
            ModelConfig::Mlp(MlpConfig {
                inputs: 784,
                outputs: 10,
                depth: 2,
                width: 512,
                activation: "relu".into(),
            }),
            128,
        ),
        (
            "cnn_mnist_b128",
            ModelConfig::Cnn(CnnConfig::default()),
            128,
        ),
        (
            "gpt_small_b32",
            ModelConfig::Gpt(GptConfig::preset("small", 65).expect("preset")),
            32,
        ),
        (
            "gpt_nanochar_b64",
            ModelConfig::Gpt(GptConfig::preset("nanochar", 65).expect("preset")),
            64,
        ),
    ];
    for (name, model, batch) in workloads {
        if wanted(name) {
            train(&gpu, &format!("{name}{suffix}"), model, batch, reps)?;
        }
    }
    Ok(())
}
