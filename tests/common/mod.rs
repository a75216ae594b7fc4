//! Shared test helpers: the GPU for this thread, seeded random data, and the op checker that
//! compares the GPU against the f64 CPU reference and the CPU gradient against central finite
//! differences. Async so that the browser tests use it too.
#![allow(dead_code)]

pub mod cases;
pub mod frozen_f16;
#[cfg(not(target_arch = "wasm32"))]
pub mod gpt2_files;
#[cfg(not(target_arch = "wasm32"))]
pub mod half;
pub mod launches;
pub mod linear;
pub mod loss_scale;
pub mod optimizer;
pub mod submits;

use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::rc::Rc;
use webgrad::data::{points, PointSet};
use webgrad::train::{Config, Session, TaskData};
use webgrad::{Device, Gpu, Result, Tensor};

thread_local! {
    static GPU: std::cell::RefCell<Option<Rc<Gpu>>> = const { std::cell::RefCell::new(None) };
}

/// Every parameter's values, in the session's order.
pub async fn param_values(params: &[(String, Tensor)]) -> Vec<Vec<f32>> {
    let mut out = Vec::new();
    for (_, p) in params {
        out.push(p.to_vec().await.unwrap());
    }
    out
}

/// The GPU device of this test thread, created once.
pub async fn gpu() -> Device {
    if let Some(g) = GPU.with(|g| g.borrow().clone()) {
        return Device::Gpu(g);
    }
    let g = Gpu::new()
        .await
        .expect("a GPU adapter (lavapipe natively, SwiftShader in the browser)");
    GPU.with(|cell| *cell.borrow_mut() = Some(g.clone()));
    // Never dropped: wgpu cannot release buffers while thread-locals are being torn down.
    std::mem::forget(g.clone());
    Device::Gpu(g)
}

/// Natively, runs a future to completion.
#[cfg(not(target_arch = "wasm32"))]
pub fn run<T>(f: impl std::future::Future<Output = T>) -> T {
    pollster::block_on(f)
}

/// Runs the CLI; returns (exit status, stdout, stderr).
#[cfg(not(target_arch = "wasm32"))]
pub fn cli(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_webgrad"))
        .args(args)
        .env("XDG_RUNTIME_DIR", "/tmp")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// `webgrad train` on the xor task for `steps` steps, evaluating every 10, with `more`
/// arguments (a place to save to, a checkpoint to load); returns what `cli` returns.
#[cfg(not(target_arch = "wasm32"))]
pub fn train_xor(steps: &str, more: &[&str]) -> (i32, String, String) {
    let args = [
        "train",
        "--task",
        "xor",
        "--steps",
        steps,
        "--eval-every",
        "10",
    ];
    cli(&[&args[..], more].concat())
}

/// A refusal: status 2, nothing on stdout (nothing trained), one line naming the cause.
#[cfg(not(target_arch = "wasm32"))]
pub fn assert_refused(args: &[&str], expect: &str) {
    let (code, out, err) = cli(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(out.is_empty(), "{args:?} printed {out}");
    assert_eq!(
        err.trim().lines().count(),
        1,
        "{args:?}: one line, got {err}"
    );
    assert!(
        err.contains(expect),
        "{args:?}: expected {expect:?}, got {err}"
    );
}

/// The stored shape of an operand that is used transposed.
pub fn stored(rows: usize, cols: usize, t: bool, batch: &[usize]) -> Vec<usize> {
    let mut s = batch.to_vec();
    s.extend(if t { [cols, rows] } else { [rows, cols] });
    s
}

/// A spiral session of `config` on 2,000 points.
pub fn spiral_session(device: &Device, config: &Config) -> Session {
    let data = points(PointSet::Spiral, 2000, config.noise, 0.2, config.seed).unwrap();
    Session::new(config.clone(), TaskData::Labelled(data), device).unwrap()
}

/// `n` values uniform in [lo, hi), from `seed`.
pub fn uniform(n: usize, lo: f64, hi: f64, seed: u64) -> Vec<f64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

/// `n` integers below `max`, from `seed`.
pub fn indices(n: usize, max: u32, seed: u64) -> Vec<u32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(0..max)).collect()
}

/// The CPU, then the GPU with each kernel set (Some(emulated)): where a fused op is checked
/// against the ops it fuses.
pub fn every_backend(gpu: &Device) -> [(Device, Option<bool>); 3] {
    [
        (Device::Cpu, None),
        (gpu.clone(), Some(false)),
        (gpu.clone(), Some(true)),
    ]
}

/// A leaf of values uniform in [-1, 1) that wants its gradient.
pub fn leaf(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    let values = uniform(shape.iter().product(), -1.0, 1.0, seed);
    Tensor::from_f64(values, shape, device).unwrap().with_grad()
}

/// `out`'s values, then the gradients of `leaves` for loss = Σ out · r with a fixed random r.
pub async fn value_and_grads(out: &Tensor, leaves: &[&Tensor]) -> Vec<Vec<f64>> {
    let r = uniform(out.numel(), -1.0, 1.0, 5);
    let r = Tensor::from_f64(r, out.shape(), out.device()).unwrap();
    let grads = out.mul(&r).unwrap().sum_all().unwrap().backward().unwrap();
    let mut values = vec![out.to_vec_f64().await.unwrap()];
    for t in leaves {
        values.push(grads.get(t).unwrap().to_vec_f64().await.unwrap());
    }
    values
}

/// `assert_close` on each part of two lists, `what` naming the list and `parts` its parts.
pub fn assert_parts_close(what: &str, parts: &str, got: &[Vec<f64>], want: &[Vec<f64>], tol: f64) {
    for (i, (got, want)) in got.iter().zip(want).enumerate() {
        assert_close(&format!("{what}, {parts}[{i}]"), got, want, tol);
    }
}

/// The share of `values` that are exactly zero (what a ReLU cut).
pub fn zero_share(values: &[f64]) -> f64 {
    values.iter().filter(|&&v| v == 0.0).count() as f64 / values.len().max(1) as f64
}

/// Asserts |got - want| <= tol (|want| + mean |want|) elementwise: a relative tolerance scaled
/// by the magnitude of the reference.
pub fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let scale = want.iter().map(|v| v.abs()).sum::<f64>() / want.len().max(1) as f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let bound = tol * (w.abs() + scale + 1e-12);
        assert!(
            (g - w).abs() <= bound,
            "{what}[{i}]: got {g}, want {w} (bound {bound:e})"
        );
    }
}

/// An input of an op under test: values and shape.
#[derive(Clone)]
pub struct Input {
    pub values: Vec<f64>,
    pub shape: Vec<usize>,
}

pub fn input(shape: &[usize], seed: u64) -> Input {
    let n = shape.iter().product();
    Input {
        values: uniform(n, -1.0, 1.0, seed),
        shape: shape.to_vec(),
    }
}

/// How many elements of each input the finite-difference check perturbs (spread evenly).
const FD_SAMPLES: usize = 24;

/// The output size up to which every input gets `FD_SAMPLES` finite differences. Each costs
/// two evaluations of the op on the CPU at full size, so a larger output gets proportionally
/// fewer, down to `FD_FEWEST`: an 8,192-row linear layer took 15 s of checks (its CPU gradients
/// are the same code as a small one's, which the small shapes check in full).
const FD_FULL_OUTPUT: usize = 1 << 16;
const FD_FEWEST: usize = 3;

/// How many elements of each input get a finite difference, for an output of `len` values.
fn fd_samples(len: usize) -> usize {
    (FD_SAMPLES * FD_FULL_OUTPUT / len.max(1)).clamp(FD_FEWEST, FD_SAMPLES)
}

/// Checks one op, given as a function of its f32 inputs on a device:
/// 1. the GPU forward equals the f64 CPU reference (tolerance `tol`);
/// 2. with loss = Σ out · w for fixed random w, the GPU gradients equal the CPU ones;
/// 3. the CPU gradients equal central finite differences of the CPU loss in f64 (at fewer
///    elements where the output is large: `fd_samples`).
pub async fn check_op<F>(name: &str, inputs: &[Input], tol: f64, op: F)
where
    F: Fn(&Device, &[Tensor]) -> Result<Tensor>,
{
    let gpu = gpu().await;
    let Device::Gpu(context) = &gpu else {
        unreachable!("gpu() gives a GPU")
    };
    let leaves = |device: &Device| -> Vec<Tensor> {
        inputs
            .iter()
            .map(|i| {
                Tensor::from_f64(i.values.clone(), &i.shape, device)
                    .unwrap()
                    .with_grad()
            })
            .collect()
    };
    let cpu_in = leaves(&Device::Cpu);
    let cpu_out = op(&Device::Cpu, &cpu_in).unwrap();
    let want = cpu_out.to_vec_f64().await.unwrap();
    let weights = uniform(want.len(), -1.0, 1.0, 99);
    let loss = |device: &Device, out: &Tensor| -> Tensor {
        let w = Tensor::from_f64(weights.clone(), out.shape(), device).unwrap();
        out.mul(&w).unwrap().sum_all().unwrap()
    };
    let cpu_grads = loss(&Device::Cpu, &cpu_out).backward().unwrap();

    // Both kernel sets: for real GPUs (workgroup memory) and for emulated ones (none).
    for emulated in [false, true] {
        context.use_emulated_kernels(Some(emulated));
        let name = format!(
            "{name} ({} kernels)",
            if emulated { "emulated-GPU" } else { "GPU" }
        );
        let gpu_in = leaves(&gpu);
        let gpu_out = op(&gpu, &gpu_in).unwrap();
        assert_eq!(cpu_out.shape(), gpu_out.shape(), "{name}: output shapes");
        assert_close(
            &format!("{name} forward"),
            &gpu_out.to_vec_f64().await.unwrap(),
            &want,
            tol,
        );
        let gpu_grads = loss(&gpu, &gpu_out).backward().unwrap();
        for (k, (c, g)) in cpu_in.iter().zip(&gpu_in).enumerate() {
            let cg = cpu_grads
                .get(c)
                .unwrap_or_else(|| panic!("{name}: no CPU gradient for input {k}"));
            let gg = gpu_grads
                .get(g)
                .unwrap_or_else(|| panic!("{name}: no GPU gradient for input {k}"));
            let cg = cg.to_vec_f64().await.unwrap();
            assert_close(
                &format!("{name} grad {k} (GPU vs CPU)"),
                &gg.to_vec_f64().await.unwrap(),
                &cg,
                tol * 10.0,
            );
        }
    }
    context.use_emulated_kernels(None);

    for (k, c) in cpu_in.iter().enumerate() {
        let cg = cpu_grads.get(c).unwrap().to_vec_f64().await.unwrap();
        // Central differences in f64 on the CPU.
        let n = inputs[k].values.len();
        let step = (n / fd_samples(want.len())).max(1);
        let (mut fd, mut analytic) = (Vec::new(), Vec::new());
        for e in (0..n).step_by(step) {
            let h = 1e-6;
            let eval = |delta: f64| -> f64 {
                let ins: Vec<Tensor> = inputs
                    .iter()
                    .enumerate()
                    .map(|(j, inp)| {
                        let mut v = inp.values.clone();
                        if j == k {
                            v[e] += delta;
                        }
                        Tensor::from_f64(v, &inp.shape, &Device::Cpu).unwrap()
                    })
                    .collect();
                let out = webgrad::no_grad(|| op(&Device::Cpu, &ins)).unwrap();
                let l = webgrad::no_grad(|| loss(&Device::Cpu, &out));
                run_now(l.to_vec_f64())[0]
            };
            fd.push((eval(h) - eval(-h)) / (2.0 * h));
            analytic.push(cg[e]);
        }
        assert_close(
            &format!("{name} grad {k} (CPU vs finite differences)"),
            &analytic,
            &fd,
            1e-5,
        );
    }
}

/// CPU tensors read back without waiting on anything; their futures are ready at once.
fn run_now<T>(f: impl std::future::Future<Output = Result<T>>) -> T {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v.unwrap(),
        std::task::Poll::Pending => panic!("a CPU readback should be ready at once"),
    }
}
