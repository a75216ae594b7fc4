//! Mixed precision (src/gpu/precision.rs): products whose operands are rounded to f16 and
//! multiplied on the GPU's matrix units, adding in f32, or where it has none (lavapipe) on its
//! f16 arithmetic, against the f64 CPU reference: within f16's error, and outside f32's (so
//! that the f16 kernel is what ran). Where the adapter has neither, f16 is refused with the
//! reason; without matrix units auto keeps f32. The loss scale that keeps f16's gradients in
//! range skips a step that overflowed, on any GPU.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::half::{assert_f16, gpu_with_f16};
use common::{run, stored, uniform};
use webgrad::bench::check::{relative_error, F16_ERROR_AT_MOST, F32_ERROR_AT_MOST};
use webgrad::gpu::{Precision, Tuning};
use webgrad::optim::Optimizer;
use webgrad::{Device, Tensor};

#[test]
fn f16_products_match_the_cpu_within_f16s_error_where_offered_and_are_refused_where_not() {
    run(async {
        let Some((gpu, context, path)) = gpu_with_f16().await else {
            return;
        };
        let before = context.dispatches_of(path.family());
        // Ragged edges in every layout, rows a multiple of 4 long (vec4 fetches) or not (one
        // value at a time), depths ragged at the slices of 32, and a batch of 3; each of 2^23
        // multiply-adds or more, as the matrix units take.
        for (m, k, n, ta, tb, batch) in [
            (200, 330, 136, false, false, 1),
            (260, 136, 260, true, false, 1),
            (260, 100, 332, false, true, 1),
            (136, 300, 136, true, true, 3),
            (129, 450, 151, false, false, 1),
            (131, 333, 193, true, true, 1),
        ] {
            let product = |d: &Device| {
                let (bs, ks) = (batch * m * k, batch * k * n);
                let a =
                    Tensor::from_f64(uniform(bs, -1.0, 1.0, 1), &stored(m, k, ta, &[batch]), d)?;
                let b =
                    Tensor::from_f64(uniform(ks, -1.0, 1.0, 2), &stored(k, n, tb, &[batch]), d)?;
                a.matmul_t(&b, ta, tb)
            };
            let got = product(&gpu).unwrap().to_vec_f64().await.unwrap();
            let want = product(&Device::Cpu).unwrap().to_vec_f64().await.unwrap();
            assert_f16(&format!("{batch}x{m}x{k}x{n} ta={ta} tb={tb}"), &got, &want);
        }
        // A linear layer's gradients: the input's and the weight's from f16 products; the
        // bias's, op(A)'s row sums, added in f32 from the f16 values the product read (as
        // PyTorch's autocast sums f16 gradients).
        let shape = (520, 132, 136);
        let want = common::linear::grads(&Device::Cpu, shape).await;
        let got = common::linear::grads(&gpu, shape).await;
        assert_f16("linear: the input's gradient", &got[0], &want[0]);
        assert_f16("linear: the weight's gradient", &got[1], &want[1]);
        // On lavapipe the bias's gradient is a column sum of its own, in f32 (bias_grad.rs).
        match context.tuning().emulated {
            true => {
                let error = relative_error(&got[2], &want[2]);
                assert!(error <= F32_ERROR_AT_MOST, "the bias's gradient: {error:e}");
            }
            false => assert_f16("linear: the bias's gradient", &got[2], &want[2]),
        }
        let ran = context.dispatches_of(path.family()) - before;
        // K split among the matrix units' workgroups where their tiles are few (a GPU that
        // runs 132 at once): chunks of whole 64-deep slices, a ragged K's last chunk short,
        // a batch's chunks apart, then summed with the bias.
        let measured = context.tuning();
        context.set_tuning(Tuning {
            tiles_at_once: Some(132),
            ..measured
        });
        let sums = context.dispatches_of("matmul_split_sum");
        for (m, k, n, ta, tb, batch) in [
            (136, 1000, 136, false, false, 1),
            (200, 1100, 140, true, true, 2),
        ] {
            let product = |d: &Device| {
                let a = Tensor::from_f64(
                    uniform(batch * m * k, -1.0, 1.0, 3),
                    &stored(m, k, ta, &[batch]),
                    d,
                )?;
                let b = Tensor::from_f64(
                    uniform(batch * k * n, -1.0, 1.0, 4),
                    &stored(k, n, tb, &[batch]),
                    d,
                )?;
                a.matmul_t(&b, ta, tb)
            };
            let got = product(&gpu).unwrap().to_vec_f64().await.unwrap();
            let want = product(&Device::Cpu).unwrap().to_vec_f64().await.unwrap();
            assert_f16(
                &format!("split: {batch}x{m}x{k}x{n} ta={ta} tb={tb}"),
                &got,
                &want,
            );
        }
        let layer = |d: &Device| {
            let x = Tensor::from_f64(uniform(136 * 1000, -1.0, 1.0, 5), &[136, 1000], d)?;
            let w = Tensor::from_f64(uniform(136 * 1000, -1.0, 1.0, 6), &[136, 1000], d)?;
            let b = Tensor::from_f64(uniform(136, -1.0, 1.0, 7), &[136], d)?;
            x.linear(&w, Some(&b))
        };
        let got = layer(&gpu).unwrap().to_vec_f64().await.unwrap();
        let want = layer(&Device::Cpu).unwrap().to_vec_f64().await.unwrap();
        assert_f16("split: a linear layer with its bias", &got, &want);
        context.set_tuning(measured);
        let split = context.dispatches_of("matmul_split_sum") - sums;
        assert!(split >= 3, "{split} split sums after the matrix units");
        context.set_precision(Precision::F32).unwrap();
        assert!(ran >= 9, "{ran} products on {}", path.family());
    });
}

/// How a test's q, k and v are given: as f32 or f16 leaves, or made by a linear layer (an
/// identity over f32 values: the same values rounded to f16) whose input needs a gradient, so
/// that the layer's product reads dq, dk and dv in f16 and the kernels store them so; the
/// layer storing them in f16 (as a GPT's does) or in f32 (the kernels then round them).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Given {
    F32,
    F16,
    ByLayer,
    ByF32Layer,
}

/// Causal attention in an f16 run on cooperative matrices (src/ops/attention/matrix.rs), its
/// output through a linear layer (as in a GPT) and the gradients of q, k and v against the
/// CPU's f64, outside f32's error (so that the matrix units ran) and within f16's, on 3 heads
/// of 64 over 3 blocks of 64 positions (the blocks fetched ahead past the first): the output
/// within the products' bound, the gradients within four times it (the bench's check's), as
/// the probabilities and their gradients are rounded to f16 before the products that take
/// them (on an H200: 8.5e-3 for the output, 1.3e-2 to 2.1e-2 for the gradients). A leaked
/// mask or a missed block would be off by far more. The same with q, k and v given in f16, and
/// so dO stored in f16 by the layer's product, as in a GPT's f16 run; and made by a layer, as
/// in a GPT, whose product reads their gradients in f16 as the kernels store them: in the
/// backward only the output's gradient is copied to f16 (dO and dq, dk, dv are stored so; on
/// an H200 the gradients 9.9e-3 to 2.4e-2 off). A value past f16's range makes the gradient
/// infinite, for the loss scale to see: from f32 q, k and v made by a layer, the infinity the
/// kernels store among their f16 gradients is the only one. Lavapipe has no cooperative
/// matrices: there the kernels are only built (the module's test) and this returns at once.
#[test]
fn attention_on_the_matrix_units_matches_the_cpu_within_f16s_error() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        if context.matrix_units() != Some(webgrad::gpu::MatrixUnits::Cooperative) {
            return;
        }
        context.set_precision(Precision::F16).unwrap();
        let families = ["attention_coop", "attention_coop_dq", "attention_coop_dkv"];
        let before = families.map(|f| context.dispatches_of(f));
        let (b, t, c, heads) = (2, 192, 192, 3);
        // The attention's output into a product, as in a GPT: over f16 inputs the product
        // stores dO in f16 for the kernels.
        let w = uniform(c * c, -0.1, 0.1, 12);
        let copies = || context.dispatches_of("matmul_operand_f16");
        let products = || context.dispatches_of("matmul_coop");
        // The output and the gradient of q, k and v, and the f16 copies the backward made.
        let grads = async |d: &Device, values: Vec<f64>, given: Given| {
            let shape = [b, t, 3 * c];
            let leaf = match given {
                Given::F16 => Tensor::from_f64_as_f16(values, &shape, d),
                Given::F32 => Tensor::from_f64(values, &shape, d),
                Given::ByLayer | Given::ByF32Layer => Tensor::from_f64(values, &[b * t, 3 * c], d),
            };
            let leaf = leaf.unwrap().with_grad();
            let eye = (0..9 * c * c).map(|i| f64::from(i % (3 * c + 1) == 0));
            let eye = Tensor::from_f64(eye.collect(), &[3 * c, 3 * c], d).unwrap();
            let qkv = match given {
                Given::ByLayer => {
                    let qkv = leaf.linear_halves(&eye, None).unwrap();
                    assert!(matches!(d, Device::Cpu) || qkv.dtype() == webgrad::DType::F16);
                    qkv.reshape(&shape).unwrap()
                }
                Given::ByF32Layer => leaf.linear(&eye, None).unwrap().reshape(&shape).unwrap(),
                _ => leaf.clone(),
            };
            let w = Tensor::from_f64(w.clone(), &[c, c], d).unwrap();
            let out = qkv
                .attention_packed(heads)
                .unwrap()
                .linear(&w, None)
                .unwrap();
            let (copied, multiplied) = (copies(), products());
            let values = common::value_and_grads(&out, &[&leaf]).await;
            let grads = [values[0].clone(), values[1].clone()];
            (grads, copies() - copied, products() - multiplied)
        };
        let values = uniform(b * t * 3 * c, -1.0, 1.0, 11);
        let (want, _, _) = grads(&Device::Cpu, values.clone(), Given::F32).await;
        let all = [Given::F32, Given::F16, Given::ByLayer, Given::ByF32Layer];
        for given in all {
            let widened = context.dispatches_of("unpack_f16");
            let (got, copied, multiplied) = grads(&gpu, values.clone(), given).await;
            check_attention(&got, &want, c, given);
            // f16 inputs and dO read as they lie: none widened for the kernels; dq, dk and
            // dv made in f16 for the layer's product on the matrix units, not copied.
            let widenings = context.dispatches_of("unpack_f16") - widened;
            assert_eq!(widenings, 0, "{widenings} widened, {given:?}");
            assert_eq!(
                copied, 1,
                "{copied} copied to f16 in the backward, {given:?}"
            );
            let by_layer = matches!(given, Given::ByLayer | Given::ByF32Layer);
            let want_products = 1 + by_layer as u64;
            assert_eq!(
                multiplied, want_products,
                "{multiplied} products, {given:?}"
            );
        }
        // Past f16's range: rounded by the kernels from f32, an infinity in f16.
        let mut past_f16 = values;
        past_f16[5 * 3 * c + c + 7] = 1e5;
        for given in all {
            let (overflowed, _, _) = grads(&gpu, past_f16.clone(), given).await;
            assert!(
                overflowed[1].iter().any(|g| !g.is_finite()),
                "the overflow went unseen, {given:?}"
            );
        }
        context.set_precision(Precision::F32).unwrap();
        for (family, before) in families.iter().zip(before) {
            let ran = context.dispatches_of(family) - before;
            assert_eq!(ran, 8, "{family} ran {ran} times");
        }
    });
}

/// The attention's output and gradient `got` (from q, k and v `given` so) against the CPU's:
/// outside f32's error and within f16's for the output, four times it for the gradients.
fn check_attention(got: &[Vec<f64>; 2], want: &[Vec<f64>; 2], c: usize, given: Given) {
    let bounded = |what: &str, got: &[f64], want: &[f64], bound: f64| {
        let error = relative_error(got, want);
        let what = format!("{what}, q, k and v {given:?}");
        eprintln!("{what}: {error:.1e} off the CPU's (at most {bound:.0e})");
        assert!(
            error <= bound && error > F32_ERROR_AT_MOST,
            "{what}: {error:e}"
        );
    };
    bounded("attention's output", &got[0], &want[0], F16_ERROR_AT_MOST);
    // The gradients of q, k and v, each its third of every row.
    let part = |values: &[f64], i: usize| -> Vec<f64> {
        values
            .chunks(c)
            .skip(i)
            .step_by(3)
            .flatten()
            .copied()
            .collect()
    };
    for (i, name) in ["q", "k", "v"].iter().enumerate() {
        let what = format!("attention's gradient of {name}");
        let bound = 4.0 * F16_ERROR_AT_MOST;
        bounded(&what, &part(&got[1], i), &part(&want[1], i), bound);
    }
}

#[test]
fn an_overflow_skips_the_step_and_halves_the_scale_which_grows_back_after_clean_steps() {
    for config in common::loss_scale::configs() {
        run(common::loss_scale::overflow_skips(config));
    }
}

/// Losses are scaled from the first backward whose forward ran a product in f16: never while
/// every product is too small for the f16 kernels (2^23 multiply-adds), and from then on where
/// the adapter has them.
#[test]
fn losses_are_scaled_once_a_product_runs_in_f16() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let before = context.tuning();
        // The f16 kernel the adapter offers, if any (set in the device's tuning).
        let products = context
            .set_precision(Precision::F16)
            .ok()
            .and_then(|c| c.products);
        let w = Tensor::from_f64(uniform(256 * 256, -0.1, 0.1, 3), &[256, 256], &gpu)
            .unwrap()
            .with_grad();
        let params = vec![("w".to_string(), w.clone())];
        let config = common::loss_scale::configs()[1].clone();
        let mut optimizer = Optimizer::for_device(config, &params, &gpu).unwrap();
        let loss_of = |rows: usize| {
            let x = Tensor::from_f64(uniform(rows * 256, -1.0, 1.0, 4), &[rows, 256], &gpu);
            x.unwrap().matmul(&w).unwrap().sum_all().unwrap()
        };
        // 4 × 256 × 256: 0.26 M multiply-adds, in f32. An evaluation's product of 256³ (16.8
        // M) in f16 before its forward does not count.
        drop(loss_of(256));
        optimizer.forward_begins();
        optimizer.backward(&loss_of(4)).unwrap();
        assert!(
            optimizer.loss_scale().is_none(),
            "scaled with no f16 product"
        );
        if products.is_some() {
            optimizer.forward_begins();
            optimizer.backward(&loss_of(256)).unwrap();
            assert!(
                optimizer.loss_scale().is_some(),
                "not scaled after an f16 product"
            );
        }
        context.set_tuning(before);
    });
}
