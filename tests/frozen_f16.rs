//! Frozen weights held in f16 (src/tensor/half.rs): their values round trip as f16's, and f32
//! tensors round to them on the GPU as on the CPU (`to_f16`, a recomputed block's kept input);
//! products read them as their second operand on each kernel set (the emulated GPUs', the small
//! and the large tiles) as the CPU multiplies the same rounded values, gradients through them
//! included.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::frozen_f16::{self, rounded};
use common::{assert_close, run, uniform};
use webgrad::gpu::Compiler;
use webgrad::{DType, Device, Tensor};

#[test]
fn f16_values_round_trip_and_are_assigned_and_widened_as_f16s() {
    run(async {
        let gpu = common::gpu().await;
        // Sizes that end inside a group of 4 halves, and one that ends on it.
        for n in [1, 7, 10, 16] {
            let values = uniform(n, -70_000.0, 70_000.0, n as u64);
            let next = uniform(n, -2.0, 2.0, n as u64 + 1);
            for device in [Device::Cpu, gpu.clone()] {
                let t = Tensor::from_f64_as_f16(values.clone(), &[n], &device).unwrap();
                assert_eq!(t.dtype(), DType::F16);
                // Past f16's 65,504 the values become infinities, as f16 has it.
                let want = rounded(&values);
                assert_eq!(t.to_vec_f64().await.unwrap(), want, "n = {n}");
                let wide = t.to_f32().unwrap();
                assert_eq!(wide.dtype(), DType::F32);
                assert_eq!(wide.to_vec_f64().await.unwrap(), want, "widened, n = {n}");
                let next32: Vec<f32> = next.iter().map(|&v| v as f32).collect();
                t.assign(&next32).unwrap();
                let want = rounded(&next32.iter().map(|&v| v as f64).collect::<Vec<_>>());
                assert_eq!(t.to_vec_f64().await.unwrap(), want, "assigned, n = {n}");
                let zeros = Tensor::zeros_f16(&[n], &device).unwrap();
                assert_eq!(zeros.to_vec_f64().await.unwrap(), vec![0.0; n]);
            }
        }
    });
}

#[test]
fn f32_tensors_round_to_f16_on_the_gpu_as_on_the_cpu() {
    run(async {
        let gpu = common::gpu().await;
        // Odd sizes end inside a packed word; values past f16's range are held at its
        // largest, ±65,504 (WGSL leaves them undefined).
        for n in [1, 7, 10, 16, 1001] {
            let values = uniform(n, -70_000.0, 70_000.0, n as u64);
            let small = uniform(n, -1e-3, 1e-3, n as u64 + 1);
            for values in [values, small] {
                let held: Vec<f64> = values.iter().map(|v| v.clamp(-65504.0, 65504.0)).collect();
                let want = rounded(&held);
                let t = Tensor::from_f64(values.clone(), &[n], &gpu).unwrap();
                let halves = t.to_f16().unwrap();
                assert_eq!(halves.dtype(), DType::F16);
                let got = halves.to_vec_f64().await.unwrap();
                let on_cpu = Tensor::from_f64(values.clone(), &[n], &Device::Cpu)
                    .and_then(|t| t.to_f16())
                    .unwrap();
                assert_eq!(on_cpu.to_vec_f64().await.unwrap(), want, "CPU, n = {n}");
                // WGSL lets the GPU round to either neighbouring half: within one f16 step
                // (2^-10 of the power of two below, 2^-24 among the subnormals).
                for (i, ((g, w), v)) in got.iter().zip(&want).zip(&values).enumerate() {
                    let step = 2f64.powi((w.abs().max(6.1e-5).log2().floor() as i32) - 10);
                    assert!(
                        (g - w).abs() <= step,
                        "n = {n}, [{i}]: {v} became {g}, not {w}"
                    );
                }
                let widened = halves.to_f32().unwrap().to_vec_f64().await.unwrap();
                assert_eq!(widened, got, "widened again, n = {n}");
            }
        }
        let ids = Tensor::from_u32(vec![1, 2, 3], &[3], &gpu).unwrap();
        let refused = ids.to_f16().unwrap_err().to_string();
        assert!(refused.contains("not u32"), "{refused}");
    });
}

#[test]
fn products_read_an_f16_second_operand_as_the_cpu_multiplies_its_rounded_values() {
    run(async {
        let gpu = common::gpu().await;
        frozen_f16::products_match_the_cpu(&gpu).await;
        // With the kernel variants Chrome's compiler gets (blocks transposed in registers, no
        // prefetch), run natively.
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let opened = context.tuning();
        context.set_tuning(opened.with_compiler(Compiler::Tint));
        frozen_f16::products_match_the_cpu(&gpu).await;
        context.set_tuning(opened);
    });
}

#[test]
fn an_embedding_gathers_the_rounded_rows_of_an_f16_table() {
    run(async { frozen_f16::embeddings_match_the_cpu(&common::gpu().await).await });
}

#[test]
fn a_linear_layer_over_an_f16_weight_passes_its_input_the_gradient_of_the_rounded_weight() {
    run(async { frozen_f16::linear_layers_match_the_cpu(&common::gpu().await).await });
}

/// A LoRA run over a base held in f16 (`Config::frozen_f16`): its projections and embeddings
/// are f16 and the rest f32, it learns, and what it saves is f32 as any run's: its checkpoint holds the base's
/// values rounded to f16, loads into a run whose base is f32 and evaluates alike there, and its
/// merged model is that run's.
#[test]
fn a_lora_run_over_a_base_held_in_f16_learns_and_saves_what_an_f32_run_loads() {
    use webgrad::data::Text;
    use webgrad::nn::LoraConfig;
    use webgrad::train::{Checkpoint, Config, ModelConfig, Session, Task, TaskData};
    run(async {
        let gpu = common::gpu().await;
        let text = Text::new(&"to be or not to be, that is the question. ".repeat(40)).unwrap();
        let data = || TaskData::Text(text.clone());
        let base_config = Config::defaults(Task::Text, None, None, text.tokenizer.len()).unwrap();
        let mut base = Session::new(base_config.clone(), data(), &gpu).unwrap();
        for _ in 0..20 {
            base.train_step().unwrap();
        }
        let base_bytes = base.save().await.unwrap();
        let mut config = base_config;
        if let ModelConfig::Gpt(g) = &mut config.model {
            g.lora = Some(LoraConfig {
                rank: 4,
                alpha: 8.0,
            });
        }
        let held = Config {
            frozen_f16: true,
            ..config.clone()
        };
        let mut s = Session::new(held, data(), &gpu).unwrap();
        s.load(&base_bytes).unwrap();
        let first = s.evaluate().await.unwrap().loss;
        for _ in 0..40 {
            s.train_step().unwrap();
        }
        s.check().await.unwrap();
        let after = s.evaluate().await.unwrap().loss;
        assert!(after < first - 0.2, "validation loss {first} -> {after}");

        let saved = s.save().await.unwrap();
        let (was, now) = (
            Checkpoint::parse(&base_bytes).unwrap(),
            Checkpoint::parse(&saved).unwrap(),
        );
        // The projections and the embeddings' tables were held in f16; norms and biases f32.
        let values = |c: &Checkpoint, name: &str| -> Vec<f64> {
            c.tensors[name].1.iter().map(|&v| v as f64).collect()
        };
        for name in [
            "blocks.0.attn.qkv.weight",
            "tok_emb.weight",
            "pos_emb.weight",
        ] {
            let (base, kept) = (values(&was, name), values(&now, name));
            assert_eq!(
                kept,
                rounded(&base),
                "{name}: the saved base is the f16 one"
            );
            assert!(kept != base, "{name}: no value of the base was rounded");
        }
        assert_eq!(was.tensors["ln_f.bias"], now.tensors["ln_f.bias"]);
        let qkv = "blocks.0.attn.qkv.weight";
        let mut f32_run = Session::new(config, data(), &gpu).unwrap();
        f32_run.load(&saved).unwrap();
        let there = f32_run.evaluate().await.unwrap().loss;
        assert!((there - after).abs() < 1e-5, "{there} against {after}");
        let merged = |b: Vec<u8>| Checkpoint::parse(&b).unwrap().tensors[qkv].1.clone();
        let (got, want) = (
            merged(s.save_merged().await.unwrap()),
            merged(f32_run.save_merged().await.unwrap()),
        );
        let (got, want): (Vec<f64>, Vec<f64>) = (
            got.iter().map(|&v| v as f64).collect(),
            want.iter().map(|&v| v as f64).collect(),
        );
        assert_close("merged qkv", &got, &want, 1e-6);
    });
}

/// A GPU holds a LoRA run's base in f16 where its products are in f16 (under auto, on matrix
/// units), and not under auto without them (lavapipe) or under f32: every saved value of the
/// base is an f16's only where held so.
#[test]
fn a_lora_base_is_held_in_f16_where_products_are() {
    use webgrad::data::Text;
    use webgrad::gpu::Precision;
    use webgrad::nn::LoraConfig;
    use webgrad::train::{Checkpoint, Config, ModelConfig, Session, Task, TaskData};
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let text = Text::new(&"to be or not to be, that is the question. ".repeat(40)).unwrap();
        let mut config = Config::defaults(Task::Text, None, None, text.tokenizer.len()).unwrap();
        if let ModelConfig::Gpt(g) = &mut config.model {
            g.lora = Some(LoraConfig {
                rank: 4,
                alpha: 8.0,
            });
        }
        let units = context.matrix_units().is_some();
        for (asked, held_in_f16) in [(Precision::Auto, units), (Precision::F32, false)] {
            let choice = context.set_precision(asked).unwrap();
            assert_eq!(choice.frozen_f16(), held_in_f16, "{choice:?}");
            let s = Session::new(config.clone(), TaskData::Text(text.clone()), &gpu).unwrap();
            let saved = Checkpoint::parse(&s.save().await.unwrap()).unwrap();
            let qkv = &saved.tensors["blocks.0.attn.qkv.weight"].1;
            let halves = qkv.iter().all(|&v| half::f16::from_f32(v).to_f32() == v);
            assert_eq!(halves, held_in_f16, "{asked}: the base's values as f16's");
        }
    });
}
