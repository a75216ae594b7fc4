//! The core in a real browser: WebGPU in headless Chromium (SwiftShader), through
//! `wasm-pack test --headless --chrome`. The same checks as the native tests: GPU forward vs
//! the CPU reference, GPU gradients vs CPU gradients, CPU gradients vs finite differences.
#![cfg(target_arch = "wasm32")]

mod common;
use common::{cases, input};
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

/// The layers of tests/common/cases.rs, as natively (tests/op_cases.rs).
#[wasm_bindgen_test]
async fn layers_match_the_cpu_reference() {
    cases::check_all(cases::layers()).await;
}

/// The kernels for real GPUs that the layers' shapes do not reach, compiled by the browser's
/// own WGSL compiler (stricter than naga) and checked like the others.
#[wasm_bindgen_test]
async fn gpu_fast_paths_compile_and_match() {
    // 32 × 2 × 2 tiles of 128: the large-tile matmul, fetching vec4s, with A stored [M, K] or
    // [K, M] and B stored [K, N] or [N, K], all four: in the browser A [M, K] and B [N, K] are
    // staged as blocks transposed in registers, and the products with A transposed load
    // without a branch, past the edges too (M = 132, and K = 72: five slices, the last
    // ragged; in the browser a depth of 64 or less takes the small tiles). Forward only: the
    // finite differences of check_op would take too long in a debug build of the CPU side.
    let gpu = common::gpu().await;
    let Device::Gpu(context) = &gpu else {
        unreachable!("gpu() gives a GPU")
    };
    let layouts = [
        ((false, false), [32, 132, 72], [32, 72, 136]),
        ((false, true), [32, 132, 72], [32, 136, 72]),
        ((true, false), [32, 72, 132], [32, 72, 136]),
        ((true, true), [32, 72, 132], [32, 136, 72]),
    ];
    for ((ta, tb), a_shape, b_shape) in layouts {
        let (a, b) = (input(&a_shape, 1), input(&b_shape, 2));
        let product = |device: &Device| {
            let x = Tensor::from_f64(a.values.clone(), &a.shape, device).unwrap();
            let y = Tensor::from_f64(b.values.clone(), &b.shape, device).unwrap();
            x.matmul_t(&y, ta, tb).unwrap()
        };
        context.use_emulated_kernels(Some(false));
        let got = product(&gpu).to_vec_f64().await.unwrap();
        context.use_emulated_kernels(None);
        let want = product(&Device::Cpu).to_vec_f64().await.unwrap();
        common::assert_close(
            &format!("large matmul, A transposed: {ta}, B transposed: {tb}"),
            &got,
            &want,
            1e-4,
        );
    }
    cases::check_all(cases::fast_paths()).await;
}

/// A linear layer's weight and bias gradients from one large-tile product with A transposed,
/// whose tiles also sum the rows of the output's gradient (ROW_SUMS), through the browser's
/// branch-free loads: 2,304 rows in 32 chunks of 72 (four slices of 16 and one of 8; chunks of
/// 64 rows or fewer take the small tiles in the browser), times 2 × 2 tiles of 128 over dW's
/// 132 × 136, ragged at the edges, where the loads must give zeros.
#[wasm_bindgen_test]
async fn weight_gradients_from_the_large_tiles_match_the_cpu() {
    let gpu = common::gpu().await;
    common::linear::check_grads(&gpu, (2304, 136, 132)).await;
}

/// An AdamW step over nine ragged parameters agrees with the CPU's: the gradients gathered
/// into the flat buffers seven a dispatch, then one update (as natively, tests/training.rs).
#[wasm_bindgen_test]
async fn an_optimizer_step_over_ragged_parameters_matches_the_cpu() {
    let gpu = common::gpu().await;
    common::optimizer::a_step_over_ragged_parameters_matches_the_cpu(&gpu).await;
}

/// In the browser on a real GPU the first 8 dispatches after a wait are submitted at once
/// after any stretch of more than 8, so that Chrome's GPU process decodes them while the rest
/// are recorded; after a stretch of 6, a step of 40 stays one submit. On a GPU emulated on the
/// CPU (SwiftShader, where these tests run) the first 16 after a stretch of more than 16.
#[wasm_bindgen_test]
async fn after_a_wait_the_first_dispatches_are_submitted_at_once() {
    let gpu = common::gpu().await;
    let Device::Gpu(context) = &gpu else {
        unreachable!("common::gpu gives a GPU")
    };
    context.use_emulated_kernels(Some(false));
    common::submits::submits_after_a_wait(&gpu, &[(120, 2), (40, 2), (10, 2), (6, 1)]).await;
    context.use_emulated_kernels(None);
    common::submits::submits_after_a_wait(&gpu, &[(120, 2), (40, 2), (10, 1)]).await;
}

/// Every other kernel compiles and agrees with the CPU in the browser too (browsers validate
/// WGSL more strictly than native drivers).
#[wasm_bindgen_test]
async fn every_other_kernel_runs_in_the_browser() {
    cases::check_all(cases::others()).await;
}

/// One kernel launched over the same buffers several times in one submit reads each launch's
/// own parameters, as natively (tests/autograd.rs).
#[wasm_bindgen_test]
async fn launches_over_the_same_buffers_read_their_own_parameters() {
    let device = common::gpu().await;
    common::launches::launches_over_the_same_buffers_read_their_own_parameters(&device).await;
}

/// The training session itself runs in the browser: a few steps on the spiral lower the loss.
#[wasm_bindgen_test]
async fn a_training_session_learns_in_the_browser() {
    use webgrad::data::{points, PointSet};
    use webgrad::train::{Config, Session, Task, TaskData};
    let device = common::gpu().await;
    let config = Config::defaults(Task::Spiral, None, None, 0).unwrap();
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

/// GPT-2 as transformers saved it gives transformers' logits in the browser too (natively:
/// tests/gpt2.rs; the files: tools/gpt2_golden.py).
#[wasm_bindgen_test]
async fn transformers_gpt2_gives_the_same_logits_in_the_browser() {
    use webgrad::nn::Model;
    use webgrad::train::{load_hf, HfGpt2};
    let model = include_bytes!("data/gpt2_tiny/model.safetensors");
    let config = include_str!("data/gpt2_tiny/config.json");
    let golden: serde_json::Value =
        serde_json::from_str(include_str!("data/gpt2_tiny/golden.json")).unwrap();
    let tokens: Vec<Vec<u32>> = serde_json::from_value(golden["tokens"].clone()).unwrap();
    let want: Vec<Vec<Vec<f64>>> = serde_json::from_value(golden["logits"].clone()).unwrap();
    let file = HfGpt2::parse(model, Some(config)).unwrap();
    let gpu = common::gpu().await;
    let gpt = load_hf(&file, &gpu).unwrap();
    let x = Tensor::from_u32(tokens.concat(), &[tokens.len(), tokens[0].len()], &gpu).unwrap();
    let got = gpt.forward(&x).unwrap().to_vec_f64().await.unwrap();
    common::assert_close("logits", &got, &want.concat().concat(), 1e-4);
}

/// Mixed precision in the browser: where Chrome grants subgroup matrices (a real GPU, Chrome
/// started with `--enable-unsafe-webgpu`), or shader-f16 alone (f16 then asked for runs on the
/// f16 arithmetic), products in f16 within f16's error of the CPU's and farther than f32's (so
/// that an f16 kernel ran); elsewhere, as on SwiftShader, f16 refused with the reason and auto
/// keeping f32.
#[wasm_bindgen_test]
async fn f16_products_match_the_cpu_where_granted_and_are_refused_where_not() {
    use webgrad::bench::check::{product_error, F16_ERROR_AT_MOST, F32_ERROR_AT_MOST};
    use webgrad::gpu::Precision;
    let Device::Gpu(gpu) = common::gpu().await else {
        unreachable!("gpu() gives a GPU")
    };
    let asked = match (gpu.matrix_units(), gpu.shader_f16()) {
        (Some(_), _) => Precision::Auto,
        (None, true) => Precision::F16,
        (None, false) => {
            let refused = gpu.set_precision(Precision::F16).unwrap_err().to_string();
            assert!(
                refused.contains("neither f16 matrix units nor f16 arithmetic"),
                "{refused}"
            );
            let auto = gpu.set_precision(Precision::Auto).unwrap();
            assert!(
                !auto.f16() && gpu.tuning().f16_products.is_none(),
                "{auto:?}"
            );
            return;
        }
    };
    assert!(gpu.set_precision(asked).unwrap().f16());
    let error = product_error(&gpu).await.unwrap();
    gpu.set_precision(Precision::F32).unwrap();
    assert!(
        error > F32_ERROR_AT_MOST && error <= F16_ERROR_AT_MOST,
        "f16 products {error:e} off"
    );
}

/// Packed attention on each path open to it in the browser against the CPU's
/// (src/bench/check_attention.rs): in f16 where Chrome grants subgroup matrices (the kernels on
/// them in Chrome's dialect among the paths where the workgroup memory takes them), and never
/// on them where it does not; elsewhere, as on SwiftShader, in f32.
#[wasm_bindgen_test]
async fn attention_matches_the_cpu_on_each_path_in_the_browser() {
    use webgrad::bench::check_attention::{attention_errors, within_bounds};
    use webgrad::gpu::{AttentionPath, Precision};
    let Device::Gpu(gpu) = common::gpu().await else {
        unreachable!("gpu() gives a GPU")
    };
    let units = gpu.matrix_units().is_some();
    if units {
        gpu.set_precision(Precision::F16).unwrap();
    }
    let f16 = gpu.tuning().f16_products.is_some();
    let errors = attention_errors(&gpu).await;
    gpu.set_precision(Precision::F32).unwrap();
    let errors = errors.unwrap();
    assert!(!errors.is_empty());
    for e in &errors {
        assert!(within_bounds(e, f16), "{e:?}");
    }
    let on_units = errors.iter().any(|e| e.path == AttentionPath::Matrix);
    assert!(units || !on_units, "{errors:?}");
}

/// Frozen weights held in f16 read by the products and the embedding's gather as natively (tests/frozen_f16.rs), through
/// the browser's own compiler.
#[wasm_bindgen_test]
async fn products_over_f16_weights_match_the_cpu_in_the_browser() {
    let gpu = common::gpu().await;
    common::frozen_f16::products_match_the_cpu(&gpu).await;
    common::frozen_f16::linear_layers_match_the_cpu(&gpu).await;
    common::frozen_f16::embeddings_match_the_cpu(&gpu).await;
}

/// The dynamic loss scale of mixed precision, as natively (tests/half.rs): its kernel compiled
/// by the browser's own WGSL compiler, stricter than naga.
#[wasm_bindgen_test]
async fn an_overflow_skips_the_step_and_halves_the_scale_in_the_browser() {
    for config in common::loss_scale::configs() {
        common::loss_scale::overflow_skips(config).await;
    }
}
