//! Mixed precision (src/gpu/precision.rs): products whose operands are rounded to f16 and
//! multiplied on the GPU's matrix units, adding in f32, or where it has none (lavapipe) on its
//! f16 arithmetic, against the f64 CPU reference: within f16's error, and outside f32's (so
//! that the f16 kernel is what ran). Where the adapter has neither, f16 is refused with the
//! reason; without matrix units auto keeps f32. The loss scale that keeps f16's gradients in
//! range skips a step that overflowed, on any GPU.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{run, stored, uniform};
use std::rc::Rc;
use webgrad::bench::check::{relative_error, F16_ERROR_AT_MOST, F32_ERROR_AT_MOST};
use webgrad::gpu::{F16Products, Gpu, Precision, ProductVariant, Tiles, Tuning};
use webgrad::ops::ProductPath;
use webgrad::optim::Optimizer;
use webgrad::{Device, Tensor};

/// `got` within f16's error of `want` relative to its size, and farther than f32's would be.
fn assert_f16(what: &str, got: &[f64], want: &[f64]) {
    let error = relative_error(got, want);
    assert!(
        error <= F16_ERROR_AT_MOST,
        "{what}: relative error {error:e}"
    );
    assert!(
        error > F32_ERROR_AT_MOST,
        "{what}: error {error:e} is f32's"
    );
}

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

/// Causal attention in an f16 run on cooperative matrices (src/ops/attention/matrix.rs), its
/// output and the gradients of q, k and v against the CPU's f64, outside f32's error (so that
/// the matrix units ran) and within f16's, on 3 heads of 64 over 3 blocks of 64 positions (the
/// blocks fetched ahead past the first): the output within the products' bound, the
/// gradients within twice it, as the probabilities and their gradients are rounded to f16
/// before the products that take them (on an H200: 6.9e-3 for the output, 1.1e-2 to 1.3e-2
/// for the gradients). A leaked mask or a missed block would be off by far more. A
/// value past f16's range makes the gradient infinite, for the loss scale to see. Lavapipe
/// has no cooperative matrices: there the kernels are only built (the module's test) and this
/// returns at once.
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
        let grads = async |d: &Device, values: Vec<f64>| {
            let qkv = Tensor::from_f64(values, &[b, t, 3 * c], d)
                .unwrap()
                .with_grad();
            let out = qkv.attention_packed(heads).unwrap();
            common::value_and_grads(&out, &[&qkv]).await
        };
        let values = uniform(b * t * 3 * c, -1.0, 1.0, 11);
        let got = grads(&gpu, values.clone()).await;
        let want = grads(&Device::Cpu, values.clone()).await;
        let bounded = |what: &str, got: &[f64], want: &[f64], bound: f64| {
            let error = relative_error(got, want);
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
            let bound = 2.0 * F16_ERROR_AT_MOST;
            bounded(&what, &part(&got[1], i), &part(&want[1], i), bound);
        }
        let mut past_f16 = values;
        past_f16[5 * 3 * c + c + 7] = 1e5;
        let overflowed = grads(&gpu, past_f16).await;
        context.set_precision(Precision::F32).unwrap();
        assert!(
            overflowed[1].iter().any(|g| !g.is_finite()),
            "the overflow went unseen"
        );
        for (family, before) in families.iter().zip(before) {
            let ran = context.dispatches_of(family) - before;
            assert_eq!(ran, 2, "{family} ran {ran} times");
        }
    });
}

/// A GELU before a product in an f16 run (`Tensor::gelu_linear`, a GPT's MLP): its output is
/// made in f16 by the operands' copy kernel with the GELU applied, no f32 GELU pass and no
/// second copy of it, and the layer's output and its gradients (through the GELU's derivative
/// to its input, the weight's from the f16 output, the bias's) match the CPU within f16's
/// error. Where the timing puts such a layer's products on f32 kernels, they read the f16
/// input too (widened as the forward's first operand, as it is as the weight gradient's
/// second, its bias summed beside it): a layer over an f16 input in an f32 run gives the CPU's
/// output and gradients over the same halves, on each kernel set.
#[test]
fn a_gelus_output_is_made_in_f16_for_an_f16_product_and_its_gradients_match_the_cpu() {
    run(async {
        let Some((gpu, context, path)) = gpu_with_f16().await else {
            return;
        };
        let (rows, k, n) = (520, 136, 136);
        let layer = |d: &Device| {
            let leaf = |shape: &[usize], seed| random_leaf(d, shape, 2.0, seed);
            let (pre, w, b) = (leaf(&[rows, k], 11), leaf(&[n, k], 12), leaf(&[n], 13));
            let r = Tensor::from_f64(uniform(rows * n, -1.0, 1.0, 14), &[rows, n], d).unwrap();
            let out = pre.gelu_linear(&w, Some(&b)).unwrap();
            let grads = out.mul(&r).unwrap().sum_all().unwrap().backward().unwrap();
            let mut all = vec![out];
            all.extend([&pre, &w, &b].map(|t| grads.get(t).unwrap().clone()));
            all
        };
        let (unary, copies, products) = (
            context.dispatches_of("unary"),
            context.dispatches_of("matmul_operand_f16"),
            context.dispatches_of(path.family()),
        );
        let got = layer(&gpu);
        let want = layer(&Device::Cpu);
        let parts = [
            "output",
            "input's gradient",
            "weight's gradient",
            "bias's gradient",
        ];
        for (i, what) in parts.iter().enumerate() {
            let got = got[i].to_vec_f64().await.unwrap();
            let want = want[i].to_vec_f64().await.unwrap();
            // On lavapipe the bias's gradient is a column sum of its own, in f32.
            match (i, context.tuning().emulated) {
                (3, true) => {
                    let error = relative_error(&got, &want);
                    assert!(error <= F32_ERROR_AT_MOST, "gelu linear: {what}: {error:e}");
                }
                _ => assert_f16(&format!("gelu linear: {what}"), &got, &want),
            }
        }
        assert_eq!(context.dispatches_of("unary"), unary, "an f32 GELU ran");
        // The GELU's f16 output, the weight and g: three copies, each once.
        let made = context.dispatches_of("matmul_operand_f16") - copies;
        assert_eq!(made, 3, "{made} f16 copies");
        let ran = context.dispatches_of(path.family()) - products;
        assert!(ran >= 3, "{ran} products on {}", path.family());
        // Once the timing has put the layer's forward product on f32 tiles, its GELU is made
        // in f32 again, by the GELU's own kernel (on the kernels for real GPUs: the emulated
        // GPUs' products have no variants to choose).
        context.use_emulated_kernels(Some(false));
        let noted = context.product_variants().take_noted();
        let forward = noted
            .iter()
            .find(|s| (s.m, s.n, s.k, s.b_transposed) == (rows, n, k, true));
        let small = ProductVariant {
            tiles: Tiles::Small,
            parts: 1,
        };
        let forward = *forward.expect("the forward product's shape was noted");
        context.product_variants().choose(forward, small);
        let unary = context.dispatches_of("unary");
        let again = layer(&gpu)[0].to_vec_f64().await.unwrap();
        assert_eq!(context.dispatches_of("unary"), unary + 1, "no f32 GELU");
        let want = want[0].to_vec_f64().await.unwrap();
        assert!(relative_error(&again, &want) <= F16_ERROR_AT_MOST);
        context.use_emulated_kernels(None);
        context.set_precision(Precision::F32).unwrap();
        let halves = uniform(rows * k, -2.0, 2.0, 15);
        let over_halves = |d: &Device| {
            let x = Tensor::from_f64_as_f16(halves.clone(), &[rows, k], d).unwrap();
            let leaf = |shape: &[usize], seed| random_leaf(d, shape, 1.0, seed);
            let (w, b) = (leaf(&[n, k], 16), leaf(&[n], 17));
            let r = Tensor::from_f64(uniform(rows * n, -1.0, 1.0, 18), &[rows, n], d).unwrap();
            let out = x.linear(&w, Some(&b)).unwrap();
            let grads = out.mul(&r).unwrap().sum_all().unwrap().backward().unwrap();
            let mut all = vec![out];
            all.extend([&w, &b].map(|t| grads.get(t).unwrap().clone()));
            all
        };
        let want = over_halves(&Device::Cpu);
        for emulated in [None, Some(false)] {
            context.use_emulated_kernels(emulated);
            let got = over_halves(&gpu);
            let parts = ["output", "weight's gradient", "bias's gradient"];
            for (i, what) in parts.iter().enumerate() {
                let got = got[i].to_vec_f64().await.unwrap();
                let want = want[i].to_vec_f64().await.unwrap();
                let error = relative_error(&got, &want);
                let name = format!("over f16 halves, {what}, emulated kernels {emulated:?}");
                assert!(error <= F32_ERROR_AT_MOST, "{name}: {error:e}");
            }
        }
        context.use_emulated_kernels(None);
    });
}

/// In an f16 run, a LayerNorm into a linear layer (a GPT's attention and MLP inputs) writes its
/// output in f16 where the layer's product reads it so, and the product reads it as it lies
/// (no copy of it): the output within f16's rounding of the CPU's LayerNorm, the layer's output
/// and every gradient (x's, the norm's weight and bias, the layer's) within f16's error. In an
/// f32 run it stays f32.
#[test]
fn a_layernorm_into_an_f16_product_is_made_in_f16_and_its_gradients_match_the_cpu() {
    run(async {
        let Some((gpu, context, _)) = gpu_with_f16().await else {
            return;
        };
        let (rows, k, n) = (520, 136, 264);
        let normed_layer = |d: &Device| {
            let leaf = |shape: &[usize], seed| random_leaf(d, shape, 1.0, seed);
            let x = leaf(&[rows, k], 31);
            let (g, b) = (leaf(&[k], 32), leaf(&[k], 33));
            let (w, bias) = (leaf(&[n, k], 34), leaf(&[n], 35));
            let normed = x.layernorm_into_linear((&g, &b, 1e-5), n).unwrap();
            let out = normed.linear(&w, Some(&bias)).unwrap();
            let r = Tensor::from_f64(uniform(rows * n, -1.0, 1.0, 36), &[rows, n], d).unwrap();
            let grads = out.mul(&r).unwrap().sum_all().unwrap().backward().unwrap();
            let mut all = vec![normed, out];
            all.extend([&x, &g, &b, &w, &bias].map(|t| grads.get(t).unwrap().clone()));
            all
        };
        let copies = context.dispatches_of("matmul_operand_f16");
        let got = normed_layer(&gpu);
        // The weight and the layer's g: the LayerNorm's output is read as it lies.
        let made = context.dispatches_of("matmul_operand_f16") - copies;
        assert_eq!(made, 2, "{made} f16 copies");
        assert_eq!(
            got[0].dtype(),
            webgrad::DType::F16,
            "the LayerNorm's output"
        );
        let want = normed_layer(&Device::Cpu);
        let parts = [
            "the LayerNorm's output",
            "output",
            "x's gradient",
            "the norm's weight's gradient",
        ];
        let parts = parts.into_iter().chain([
            "the norm's bias's gradient",
            "w's gradient",
            "bias's gradient",
        ]);
        for (i, what) in parts.enumerate() {
            let got = got[i].to_vec_f64().await.unwrap();
            let want = want[i].to_vec_f64().await.unwrap();
            let error = relative_error(&got, &want);
            // The bias's gradient sums an f32 g; the norm's are of the f32 LayerNorm's.
            match i {
                3 | 4 | 6 => assert!(error <= F16_ERROR_AT_MOST, "{what}: {error:e}"),
                _ => assert_f16(what, &got, &want),
            }
        }
        // Rounded, not more: each value within f16's spacing at its size (pack2x16float may
        // round to either neighbour).
        let (halves, exact) = (
            got[0].to_vec_f64().await.unwrap(),
            want[0].to_vec_f64().await.unwrap(),
        );
        for (h, e) in halves.iter().zip(&exact) {
            assert!(
                (h - e).abs() <= e.abs() * 2f64.powi(-10) + 2f64.powi(-24),
                "{h} for {e}"
            );
        }
        context.set_precision(Precision::F32).unwrap();
        assert_eq!(
            normed_layer(&gpu)[0].dtype(),
            webgrad::DType::F32,
            "in an f32 run"
        );
        context.set_precision(Precision::F16).unwrap();
    });
}

/// In an f16 run, the gradient through a GELU into the layer that made its input (a GPT's MLP:
/// linear, GELU, linear) is stored by its product in f16 and read so by that layer's
/// gradients' products: one f16 copy fewer, none widened. Every gradient matches the CPU
/// within f16's error, also where the first layer's output is used again beside the GELU (its
/// gradient then the sum of an f16 one and an f32 one), and where the timing put that layer's
/// input gradient on f32 tiles (the gradient then stored in f32).
#[test]
fn the_gradient_through_a_gelu_reaches_the_layer_before_it_in_f16_and_matches_the_cpu() {
    run(async {
        let Some((gpu, context, _)) = gpu_with_f16().await else {
            return;
        };
        let (rows, k, hidden, n) = (520, 136, 264, 136);
        let mlp = |d: &Device, used_again: bool| {
            let leaf = |shape: &[usize], seed| random_leaf(d, shape, 1.0, seed);
            let x = leaf(&[rows, k], 21);
            let (w1, b1) = (leaf(&[hidden, k], 22), leaf(&[hidden], 23));
            let (w2, b2) = (leaf(&[n, hidden], 24), leaf(&[n], 25));
            let r = Tensor::from_f64(uniform(rows * n, -1.0, 1.0, 26), &[rows, n], d).unwrap();
            let pre = x.linear(&w1, Some(&b1)).unwrap();
            let mut loss = pre
                .gelu_linear(&w2, Some(&b2))
                .unwrap()
                .mul(&r)
                .unwrap()
                .sum_all();
            if used_again {
                let again = pre.mul(&pre).unwrap().sum_all().unwrap();
                loss = loss.unwrap().add(&again);
            }
            let grads = loss.unwrap().backward().unwrap();
            [&x, &w1, &b1, &w2, &b2].map(|t| grads.get(t).unwrap().clone())
        };
        let parts = ["x", "w1", "b1", "w2", "b2"].map(|p| format!("{p}'s gradient"));
        for used_again in [false, true] {
            let (copies, widened) = (
                context.dispatches_of("matmul_operand_f16"),
                context.dispatches_of("unpack_f16"),
            );
            let got = mlp(&gpu, used_again);
            let want = mlp(&Device::Cpu, used_again);
            for (i, what) in parts.iter().enumerate() {
                let got = got[i].to_vec_f64().await.unwrap();
                let want = want[i].to_vec_f64().await.unwrap();
                let what = format!("{what}, used again {used_again}");
                // b2's is the sum of an f32 g: in f32 where it is a column sum of its own.
                match i {
                    4 => assert!(relative_error(&got, &want) <= F16_ERROR_AT_MOST, "{what}"),
                    _ => assert_f16(&what, &got, &want),
                }
            }
            // x, w1, w2, the GELU's output (made by the copy's kernel) and the second layer's
            // g: five copies; the gradient into the first layer would be the sixth were it
            // not stored in f16. Used again, it is widened once to be added to the other, and
            // the sum copied.
            let made = context.dispatches_of("matmul_operand_f16") - copies;
            let want_made = 5 + used_again as u64;
            assert_eq!(
                made, want_made,
                "{made} f16 copies, used again {used_again}"
            );
            // Where the weight gradient's kernel does not sum the bias's gradient beside it
            // (emulated GPUs), the column sum reads it widened.
            let unpacked = context.dispatches_of("unpack_f16") - widened;
            let want_unpacked = (used_again || context.tuning().emulated) as u64;
            assert_eq!(
                unpacked, want_unpacked,
                "{unpacked} widened, used again {used_again}"
            );
        }
        // Once the timing has put the first layer's input gradient on f32 tiles (on the
        // kernels for real GPUs: the emulated GPUs' products have no variants to choose), the
        // gradient into it is stored in f32 again, and copied for its f16 weight gradient:
        // not rounded to f16 and widened back.
        context.use_emulated_kernels(Some(false));
        let noted = context.product_variants().take_noted();
        let into_x = noted
            .iter()
            .find(|s| (s.m, s.n, s.k, s.b_transposed) == (rows, k, hidden, false));
        let into_x = *into_x.expect("the first layer's input gradient's shape was noted");
        let small = ProductVariant {
            tiles: Tiles::Small,
            parts: 1,
        };
        context.product_variants().choose(into_x, small);
        let (copies, widened) = (
            context.dispatches_of("matmul_operand_f16"),
            context.dispatches_of("unpack_f16"),
        );
        let got = mlp(&gpu, false);
        let made = context.dispatches_of("matmul_operand_f16") - copies;
        assert_eq!(
            made, 6,
            "{made} f16 copies with the input gradient on f32 tiles"
        );
        let unpacked = context.dispatches_of("unpack_f16") - widened;
        assert_eq!(
            unpacked, 0,
            "{unpacked} widened with the input gradient on f32 tiles"
        );
        let want = mlp(&Device::Cpu, false);
        for (i, what) in parts.iter().enumerate() {
            let got = got[i].to_vec_f64().await.unwrap();
            let want = want[i].to_vec_f64().await.unwrap();
            let error = relative_error(&got, &want);
            assert!(
                error <= F16_ERROR_AT_MOST,
                "{what}, on f32 tiles: {error:e}"
            );
        }
        context.use_emulated_kernels(None);
    });
}

/// A GPT block in an f16 run (its norms' outputs in f16 into their layers, the gradient through
/// its GELU in f16): its logits and every parameter's gradient match the CPU within f16's
/// error; with LoRA adapters (whose norms stay f32) its logits too.
#[test]
fn a_gpt_in_an_f16_run_matches_the_cpu_within_f16s_error() {
    use webgrad::nn::{Gpt, GptConfig, Init, LoraConfig, Model, Module};
    run(async {
        let Some((gpu, _, _)) = gpu_with_f16().await else {
            return;
        };
        let config = GptConfig {
            vocab: 13,
            context: 64,
            layers: 1,
            heads: 2,
            width: 128,
            dropout: 0.0,
            norm: Default::default(),
            lora: None,
        };
        let tokens = common::indices(8 * 64, 13, 2);
        let run = |d: &Device, config: &GptConfig| {
            let gpt = Gpt::new(config, &mut Init::new(5, d)).unwrap();
            let tokens = Tensor::from_u32(tokens.clone(), &[8, 64], d).unwrap();
            let logits = gpt.forward(&tokens).unwrap();
            let r = Tensor::from_f64(uniform(logits.numel(), -1.0, 1.0, 6), logits.shape(), d);
            let loss = logits.mul(&r.unwrap()).unwrap().sum_all().unwrap();
            let grads = loss.backward().unwrap();
            let params = gpt
                .parameters()
                .into_iter()
                .filter(|(_, t)| t.requires_grad());
            let named = params.map(|(name, t)| (name, grads.get(&t).unwrap().clone()));
            let mut all = vec![("logits".to_string(), logits)];
            all.extend(named);
            all
        };
        let lora = GptConfig {
            lora: Some(LoraConfig {
                rank: 8,
                alpha: 16.0,
            }),
            ..config.clone()
        };
        for config in [config, lora] {
            let (got, want) = (run(&gpu, &config), run(&Device::Cpu, &config));
            // With adapters, the logits (an adapter's B starts at zero, and so its A's
            // gradient). The attention's own weights' gradients pass through its f16 products
            // and softmax (3e-2 off on lavapipe), bounded by the attention's test above; the
            // norms' around them are not.
            let adapted = config.lora.is_some();
            let compared = if adapted { 1 } else { got.len() };
            let checked = got.iter().zip(&want).take(compared);
            for ((name, got), (_, want)) in checked.filter(|((n, _), _)| !n.contains(".attn.")) {
                let got = got.to_vec_f64().await.unwrap();
                let want = want.to_vec_f64().await.unwrap();
                let error = relative_error(&got, &want);
                assert!(
                    error <= F16_ERROR_AT_MOST,
                    "{name}, LoRA {adapted}: {error:e}"
                );
            }
        }
    });
}

/// A tensor of `shape` on `d` that needs a gradient, its values uniform in ±`size` from `seed`.
fn random_leaf(d: &Device, shape: &[usize], size: f64, seed: u64) -> Tensor {
    let values = uniform(shape.iter().product(), -size, size, seed);
    Tensor::from_f64(values, shape, d).unwrap().with_grad()
}

/// The tests' GPU, as a device and itself, and the f16 path it offers (`f16_path`); None where
/// it offers none.
async fn gpu_with_f16() -> Option<(Device, Rc<Gpu>, ProductPath)> {
    let gpu = common::gpu().await;
    let Device::Gpu(context) = &gpu else {
        unreachable!("common::gpu gives a GPU")
    };
    let context = context.clone();
    let path = f16_path(&context)?;
    Some((gpu, context, path))
}

/// The f16 path this GPU offers, with auto's and f16's choices asserted: the matrix units
/// (auto takes them), the f16 arithmetic (f16 takes it, auto keeps f32 and says f16 would), or
/// none (f16 refused with the reason).
fn f16_path(context: &Gpu) -> Option<ProductPath> {
    let auto = context.set_precision(Precision::Auto).unwrap();
    if context.matrix_units().is_some() {
        assert!(auto.f16(), "{auto:?}");
        return Some(ProductPath::MatrixUnits);
    }
    assert!(
        !auto.f16() && context.tuning().f16_products.is_none(),
        "{auto:?}"
    );
    assert!(auto.sentence().starts_with("Products in f32 (auto)"));
    if !context.shader_f16() {
        let refused = context
            .set_precision(Precision::F16)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("neither f16 matrix units nor"),
            "{refused}"
        );
        return None;
    }
    assert!(auto
        .why
        .contains("f16, asked for, runs on its f16 arithmetic"));
    let f16 = context.set_precision(Precision::F16).unwrap();
    assert_eq!(f16.products, Some(F16Products::Arithmetic));
    Some(ProductPath::F16Arithmetic)
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
