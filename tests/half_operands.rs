//! Values made in f16 for the products that read them next, in an f16 run
//! (`linear_reads_f16`, `Epilogue::f16_store` in src/ops/matmul/mod.rs): a GELU's output, a
//! LayerNorm's, the gradient through the GELU into the layer before it, and a linear layer's
//! output for the attention (`linear_halves`), each against the CPU's f64 and counted in the
//! copies it saves; a GPT in an f16 run against the CPU. Where the
//! timing puts the reading product on f32 tiles, the value is made in f32 again.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::half::{assert_f16, choose_small_tiles, gpu_with_f16, linear_leaves};
use common::half::{assert_parts_within, random_leaf, with_grads};
use common::{run, uniform};
use webgrad::bench::check::{relative_error, F16_ERROR_AT_MOST, F32_ERROR_AT_MOST};
use webgrad::gpu::Precision;
use webgrad::nn::{Init, Linear};
use webgrad::{DType, Device, Tensor};

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
            let [pre, w, b] = linear_leaves(d, (rows, k, n), 2.0, 11);
            let r = Tensor::from_f64(uniform(rows * n, -1.0, 1.0, 14), &[rows, n], d).unwrap();
            let out = pre.gelu_linear(&w, Some(&b)).unwrap();
            let loss = out.mul(&r).unwrap().sum_all().unwrap();
            with_grads(out, &loss, &[&pre, &w, &b])
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
        // in f32 again, by the GELU's own kernel.
        choose_small_tiles(&context, (rows, n, k, true));
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
            let loss = out.mul(&r).unwrap().sum_all().unwrap();
            with_grads(out, &loss, &[&w, &b])
        };
        let want = over_halves(&Device::Cpu);
        for emulated in [None, Some(false)] {
            context.use_emulated_kernels(emulated);
            let got = over_halves(&gpu);
            let parts = ["output", "weight's gradient", "bias's gradient"];
            let what = format!("over f16 halves, emulated kernels {emulated:?}");
            assert_parts_within(&what, &parts, (&got, &want), F32_ERROR_AT_MOST).await;
        }
        context.use_emulated_kernels(None);
    });
}

/// A linear layer stored in f16 (`Tensor::linear_halves`: a GPT's packed q, k and v where its
/// attention reads them so) in an f16 run: its output f16, within f16's rounding of the CPU's,
/// and the gradients of its input, weight and bias through a product that reads it within
/// f16's error of the CPU's. In an f32 run, and where the timing puts its product on f32 tiles,
/// it is f32.
#[test]
fn a_linear_layer_stored_in_f16_matches_the_cpu() {
    run(async {
        let Some((gpu, context, _)) = gpu_with_f16().await else {
            return;
        };
        let (rows, k, n) = (520, 136, 192);
        // Through a product, which reads the f16 output as it lies.
        let layer = |d: &Device| {
            let [x, w, b] = linear_leaves(d, (rows, k, n), 1.0, 21);
            let v = Tensor::from_f64(uniform(n, -1.0, 1.0, 24), &[n, 1], d).unwrap();
            let out = x.linear_halves(&w, Some(&b)).unwrap();
            let loss = out.matmul(&v).unwrap().sum_all().unwrap();
            with_grads(out, &loss, &[&x, &w, &b])
        };
        let got = layer(&gpu);
        assert_eq!(got[0].dtype(), DType::F16, "the output");
        let want = layer(&Device::Cpu);
        let parts = [
            "output",
            "input's gradient",
            "weight's gradient",
            "bias's gradient",
        ];
        assert_parts_within("linear in f16", &parts, (&got, &want), F16_ERROR_AT_MOST).await;
        // A GPT block's q, k, v layer: in f16 where the fused attention on the matrix units
        // reads it (not on lavapipe, which has none).
        let (b, t, c, heads) = (4, 128, 128, 2);
        let x = random_leaf(&gpu, &[b, t, c], 1.0, 25);
        let qkv = Linear::new(&mut Init::new(26, &gpu), c, 3 * c, true).unwrap();
        let packed = qkv.forward_packed_qkv(&x, heads).unwrap();
        let units = context.matrix_units().is_some();
        assert_eq!(packed.dtype() == DType::F16, units, "{:?}", packed.dtype());
        choose_small_tiles(&context, (rows, n, k, true));
        assert_eq!(layer(&gpu)[0].dtype(), DType::F32, "on f32 tiles");
        context.use_emulated_kernels(None);
        context.set_precision(Precision::F32).unwrap();
        assert_eq!(layer(&gpu)[0].dtype(), DType::F32, "in an f32 run");
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
        // Once the timing has put the first layer's input gradient on f32 tiles, the gradient
        // into it is stored in f32 again, and copied for its f16 weight gradient: not rounded
        // to f16 and widened back.
        choose_small_tiles(&context, (rows, k, hidden, false));
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
        assert_parts_within("on f32 tiles", &parts, (&got, &want), F16_ERROR_AT_MOST).await;
        context.use_emulated_kernels(None);
    });
}

/// A GPT block in an f16 run (its norms' outputs in f16 into their layers, the gradient through
/// its GELU in f16): its logits and every parameter's gradient match the CPU within f16's
/// error; with LoRA adapters (whose norms stay f32) its logits too.
#[test]
fn a_gpt_in_an_f16_run_matches_the_cpu_within_f16s_error() {
    use webgrad::nn::{Gpt, GptConfig, LoraConfig, Model, Module};
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
