//! The core in a real browser: WebGPU in headless Chromium (SwiftShader), through
//! `wasm-pack test --headless --chrome`. The same checks as the native tests: GPU forward vs
//! the CPU reference, GPU gradients vs CPU gradients, CPU gradients vs finite differences.
#![cfg(target_arch = "wasm32")]

mod common;
use common::{check_op, indices, input};
use wasm_bindgen_test::*;
use webgrad::{Device, Tensor};

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn webgpu_adapter_is_found() {
    let Device::Gpu(gpu) = common::gpu().await else {
        panic!("expected a GPU device")
    };
    assert!(!gpu.adapter_name().is_empty());
}

#[wasm_bindgen_test]
async fn matmul_with_transposes_and_backward() {
    for (ta, tb) in [(false, false), (true, true)] {
        let a = if ta {
            input(&[2, 29, 37], 1)
        } else {
            input(&[2, 37, 29], 1)
        };
        let b = if tb {
            input(&[2, 41, 29], 2)
        } else {
            input(&[2, 29, 41], 2)
        };
        check_op("matmul", &[a, b], 1e-4, |_, t| t[0].matmul_t(&t[1], ta, tb)).await;
    }
}

#[wasm_bindgen_test]
async fn cross_entropy_and_backward() {
    let targets = indices(37, 11, 5);
    check_op("cross_entropy", &[input(&[37, 11], 1)], 1e-4, |d, t| {
        t[0].cross_entropy(&Tensor::from_u32(targets.clone(), &[37], d)?)
    })
    .await;
}

#[wasm_bindgen_test]
async fn layernorm_and_backward() {
    check_op(
        "layernorm",
        &[input(&[13, 70], 1), input(&[70], 2), input(&[70], 3)],
        1e-4,
        |_, t| t[0].layernorm(&t[1], &t[2], 1e-5),
    )
    .await;
}

#[wasm_bindgen_test]
async fn attention_and_backward() {
    let ins = [
        input(&[2, 37, 24], 1),
        input(&[2, 37, 24], 2),
        input(&[2, 37, 24], 3),
    ];
    check_op("attention", &ins, 1e-4, |_, x| {
        x[0].attention(&x[1], &x[2], 3)
    })
    .await;
}

/// The kernels for real GPUs that the shapes above do not reach, compiled by the browser's own
/// WGSL compiler (stricter than naga) and checked like the others.
#[wasm_bindgen_test]
async fn gpu_fast_paths_compile_and_match() {
    // 32 × 2 × 2 tiles of 128: the large-tile matmul, fetching vec4s. Forward only: the
    // finite differences of check_op would take too long in a debug build of the CPU side.
    let gpu = common::gpu().await;
    let Device::Gpu(context) = &gpu else {
        unreachable!("gpu() gives a GPU")
    };
    context.use_emulated_kernels(Some(false));
    let (a, b) = (input(&[32, 132, 8], 1), input(&[32, 8, 136], 2));
    let product = |device: &Device| {
        let x = Tensor::from_f64(a.values.clone(), &a.shape, device).unwrap();
        let y = Tensor::from_f64(b.values.clone(), &b.shape, device).unwrap();
        x.matmul(&y).unwrap()
    };
    let got = product(&gpu).to_vec_f64().await.unwrap();
    context.use_emulated_kernels(None);
    let want = product(&Device::Cpu).to_vec_f64().await.unwrap();
    common::assert_close("large matmul", &got, &want, 1e-4);
    let ins = [input(&[2, 20, 12], 3), input(&[9, 12], 4), input(&[9], 5)];
    check_op("linear", &ins, 1e-4, |_, t| t[0].linear(&t[1], Some(&t[2]))).await;
    let ins = [
        ins[0].clone(),
        ins[1].clone(),
        ins[2].clone(),
        input(&[2, 20, 9], 7),
    ];
    check_op("linear + residual", &ins, 1e-4, |_, t| {
        t[0].linear_residual(&t[1], Some(&t[2]), &t[3])
    })
    .await;
    // Packed q, k and v (two heads of 16), read in place by the tiled attention kernels.
    let ins = [input(&[1, 40, 96], 6)];
    check_op("packed attention", &ins, 1e-4, |_, x| {
        x[0].attention_packed(2)
    })
    .await;
    check_op(
        "sum of wide columns",
        &[input(&[3, 130, 65], 7)],
        1e-4,
        |_, t| t[0].sum(1, false),
    )
    .await;
    let idx = indices(701, 11, 8);
    check_op("embedding of many", &[input(&[11, 6], 9)], 1e-4, |d, t| {
        t[0].embedding(&Tensor::from_u32(idx.clone(), &[701], d)?)
    })
    .await;
}

#[wasm_bindgen_test]
async fn conv2d_maxpool_and_backward() {
    let ins = [
        input(&[2, 3, 9, 11], 1),
        input(&[5, 3, 3, 3], 2),
        input(&[5], 3),
    ];
    check_op("conv2d", &ins, 1e-4, |_, t| {
        t[0].conv2d(&t[1], Some(&t[2]), 1, 1)?.maxpool2d(2, 2)
    })
    .await;
}

/// Every other kernel compiles and agrees with the CPU in the browser too (browsers validate
/// WGSL more strictly than native drivers).
#[wasm_bindgen_test]
async fn every_other_kernel_runs_in_the_browser() {
    let x = || input(&[7, 45], 1);
    type F = fn(&Tensor) -> webgrad::Result<Tensor>;
    let unary: [F; 14] = [
        |t| t.neg(),
        |t| t.exp(),
        |t| t.relu(),
        |t| t.gelu(),
        |t| t.tanh(),
        |t| t.sigmoid(),
        |t| t.scale(0.5)?.add_scalar(2.0)?.log(),
        |t| t.add_scalar(2.0)?.sqrt(),
        |t| t.powf(3.0),
        |t| t.softmax(),
        |t| t.log_softmax(),
        |t| t.max(0, false),
        |t| t.mean(1, true),
        |t| t.dropout(0.2, 3),
    ];
    for (i, f) in unary.into_iter().enumerate() {
        check_op(&format!("unary {i}"), &[x()], 1e-4, |_, t| f(&t[0])).await;
    }
    check_op(
        "broadcast sub/div/maximum",
        &[x(), input(&[45], 2)],
        1e-4,
        |_, t| {
            t[0].sub(&t[1])?
                .div(&t[1].scale(0.1)?.add_scalar(2.0)?)?
                .maximum(&t[1])
        },
    )
    .await;
    check_op(
        "permute, slice, concat, expand",
        &[input(&[3, 5, 7], 3)],
        1e-5,
        |_, t| {
            let p = t[0].permute(&[2, 0, 1])?.slice(0, 1, 4)?;
            Tensor::concat(&[p.clone(), p.expand(&[4, 3, 5])?], 1)
        },
    )
    .await;
    let idx = indices(30, 11, 4);
    check_op("embedding", &[input(&[11, 9], 5)], 1e-5, |d, t| {
        t[0].embedding(&Tensor::from_u32(idx.clone(), &[30], d)?)
    })
    .await;
}

/// The training session itself runs in the browser: a few steps on the spiral lower the loss.
#[wasm_bindgen_test]
async fn a_training_session_learns_in_the_browser() {
    use webgrad::data::{points, PointSet};
    use webgrad::train::{Config, Session, TaskData};
    let device = common::gpu().await;
    let config = Config::defaults("spiral", None, None, 0).unwrap();
    let data = points(PointSet::Spiral, 400, config.noise, 0.25, 0).unwrap();
    let mut session = Session::new(config, TaskData::Labelled(data), &device).unwrap();
    let before = session.evaluate().await.unwrap();
    for _ in 0..60 {
        session.train_step().unwrap();
    }
    session.check().await.unwrap();
    let after = session.evaluate().await.unwrap();
    assert!(after.loss < before.loss * 0.9, "{before:?} -> {after:?}");
    let saved = session.save().await.unwrap();
    session.load(&saved).unwrap();
    assert_eq!(session.step, 60);
}
