//! The optimizer's step on both backends; training sessions: convergence on the 2-D data and the digits, determinism, the NaN guard,
//! dropout and RMSNorm on both backends, and the routing between them.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{param_values, run, spiral_session};
use webgrad::optim::RuleKind;
use webgrad::train::{Config, Family, Session, Task, TaskData};
use webgrad::{Device, Tensor};

/// An AdamW step over nine ragged parameters on the GPU agrees with the CPU's: the gradients
/// gathered into the flat buffers seven a dispatch, then one update. A gradient of the wrong
/// shape is refused before anything changes.
#[test]
fn an_optimizer_step_over_ragged_parameters_matches_the_cpu() {
    run(async {
        let gpu = common::gpu().await;
        common::optimizer::a_step_over_ragged_parameters_matches_the_cpu(&gpu).await;
    });
}

#[test]
fn spiral_defaults_reach_97_percent_validation_accuracy() {
    run(async {
        let device = common::gpu().await;
        let config = Config::defaults(Task::Spiral, None, None, 0).unwrap();
        let mut s = spiral_session(&device, &config);
        for _ in 0..config.steps {
            s.train_step().unwrap();
        }
        s.check().await.unwrap();
        let eval = s.evaluate().await.unwrap();
        println!("spiral after {} steps: {eval:?}", config.steps);
        assert!(eval.accuracy.unwrap() >= 0.97, "{eval:?}");
    });
}

#[test]
fn digits_mlp_defaults_reach_95_percent_test_accuracy() {
    run(async {
        let device = common::gpu().await;
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/web/data/digits.bin.gz"
        ))
        .unwrap();
        let data = webgrad::data::digits_from_gzip(&bytes).unwrap();
        assert_eq!((data.train.len(), data.val.len()), (9000, 1000));
        let config = Config::defaults(Task::Digits, Some(Family::Mlp), None, 0).unwrap();
        let mut s = Session::new(config.clone(), TaskData::Labelled(data), &device).unwrap();
        for _ in 0..config.steps {
            s.train_step().unwrap();
        }
        s.check().await.unwrap();
        let eval = s.evaluate().await.unwrap();
        println!("digits MLP after {} steps: {eval:?}", config.steps);
        assert!(eval.accuracy.unwrap() >= 0.95, "{eval:?}");
    });
}

#[test]
fn the_same_seed_gives_the_same_losses() {
    run(async {
        let device = common::gpu().await;
        let mut config = Config::defaults(Task::Moons, None, None, 0).unwrap();
        config.seed = 7;
        let mut losses = Vec::new();
        for _ in 0..2 {
            let mut s = spiral_session(&device, &config);
            let mut run = Vec::new();
            for _ in 0..15 {
                s.train_step().unwrap();
                run.push(s.check().await.unwrap());
            }
            losses.push(run);
        }
        assert_eq!(losses[0], losses[1]);
        config.seed = 8;
        let mut other = spiral_session(&device, &config);
        other.train_step().unwrap();
        assert_ne!(other.check().await.unwrap(), losses[0][0]);
    });
}

#[test]
fn a_loss_that_explodes_stops_training_and_keeps_the_last_good_weights() {
    run(async {
        let device = common::gpu().await;
        let mut config = Config::defaults(Task::Xor, None, None, 0).unwrap();
        config.optimizer.rule = RuleKind::Sgd.defaults();
        config.optimizer.lr = 1e30;
        let mut s = spiral_session(&device, &config);
        // The fallback is the weights a finite loss was computed from: those before its step.
        let mut last_good = param_values(s.parameters()).await;
        let mut good_step = 0;
        let mut stopped = None;
        for _ in 0..20 {
            let (before, step_before) = (param_values(s.parameters()).await, s.step);
            s.train_step().unwrap();
            match s.check().await {
                Ok(_) => (last_good, good_step) = (before, step_before),
                Err(e) => {
                    stopped = Some(e);
                    break;
                }
            }
        }
        let e = stopped.expect("a learning rate of 1e30 must blow the loss up");
        assert!(e.to_string().contains("last good weights"), "{e}");
        let kept = param_values(s.parameters()).await;
        assert!(kept.iter().flatten().all(|v| v.is_finite()));
        assert_eq!(kept, last_good);
        // A checkpoint of them says the step they are of, not the step the run reached.
        assert_eq!(s.step, good_step, "the run's step after falling back");
    });
}

#[test]
fn gpt_dropout_is_seeded_alike_on_both_backends_and_off_in_evaluation() {
    use common::{assert_close, indices};
    use webgrad::nn::{Gpt, GptConfig, Init, Model};
    run(async {
        let config = GptConfig {
            vocab: 13,
            context: 8,
            layers: 2,
            heads: 2,
            width: 16,
            dropout: 0.3,
            norm: Default::default(),
            lora: None,
        };
        let gpu = common::gpu().await;
        let logits = |device: &Device, config: &GptConfig, seed: Option<u32>| {
            let gpt = Gpt::new(config, &mut Init::new(5, device)).unwrap();
            let tokens = Tensor::from_u32(indices(16, 13, 1), &[2, 8], device).unwrap();
            match seed {
                Some(s) => gpt.forward_train(&tokens, s).unwrap(),
                None => gpt.forward(&tokens).unwrap(),
            }
        };
        let on = |device, seed| logits(device, &config, seed);
        let (a, b) = (on(&gpu, Some(7)), on(&gpu, Some(7)));
        let (a, b) = (a.to_vec_f64().await.unwrap(), b.to_vec_f64().await.unwrap());
        assert_eq!(a, b, "the same seed drops the same activations");
        let cpu = on(&Device::Cpu, Some(7)).to_vec_f64().await.unwrap();
        assert_close("GPU masks against the CPU's", &a, &cpu, 1e-4);
        let other = on(&gpu, Some(8)).to_vec_f64().await.unwrap();
        assert!(a != other, "another seed draws other masks");
        let eval = on(&gpu, None).to_vec_f64().await.unwrap();
        assert!(a != eval, "training drops, evaluation does not");
        let without = GptConfig {
            dropout: 0.0,
            ..config.clone()
        };
        let plain = logits(&gpu, &without, None).to_vec_f64().await.unwrap();
        assert_eq!(eval, plain, "evaluation is the model without dropout");
    });
}

#[test]
fn gpt_loss_through_the_padded_vocabulary_is_the_plain_one() {
    use common::{assert_close, indices};
    use webgrad::nn::{Gpt, GptConfig, Init, Model, Module};
    run(async {
        let config = GptConfig {
            vocab: 1025,
            context: 8,
            layers: 1,
            heads: 2,
            width: 16,
            dropout: 0.0,
            norm: Default::default(),
            lora: None,
        };
        let gpu = common::gpu().await;
        let gpt = Gpt::new(&config, &mut Init::new(3, &gpu)).unwrap();
        assert_eq!(
            gpt.loss_vocab(),
            1028,
            "on a GPU the loss pads 1,025 tokens to 1,028"
        );
        let cpu = Gpt::new(&config, &mut Init::new(3, &Device::Cpu)).unwrap();
        assert_eq!(cpu.loss_vocab(), 1025, "on the CPU it does not");
        let tokens = Tensor::from_u32(indices(16, 1025, 1), &[2, 8], &gpu).unwrap();
        let targets = Tensor::from_u32(indices(16, 1025, 2), &[16], &gpu).unwrap();
        let padded = gpt.loss(&tokens, &targets, None).unwrap();
        let plain = gpt
            .forward(&tokens)
            .unwrap()
            .cross_entropy(&targets)
            .unwrap();
        let (a, b) = (padded.to_vec_f64().await, plain.to_vec_f64().await);
        assert_close("padded loss", &a.unwrap(), &b.unwrap(), 1e-5);
        let (ga, gb) = (padded.backward().unwrap(), plain.backward().unwrap());
        for (name, p) in gpt.parameters() {
            let a = ga.get(&p).unwrap().to_vec_f64().await.unwrap();
            let b = gb.get(&p).unwrap().to_vec_f64().await.unwrap();
            assert_close(&format!("padded gradient of {name}"), &a, &b, 1e-5);
        }
    });
}

#[test]
fn gpt_with_rmsnorm_agrees_across_backends_and_learns() {
    use common::{assert_close, indices};
    use webgrad::data::Text;
    use webgrad::nn::{Gpt, GptConfig, Init, Model, Module, Norm};
    use webgrad::train::{Config, ModelConfig, Session, Task, TaskData};
    run(async {
        let gpu = common::gpu().await;
        let config = GptConfig {
            vocab: 13,
            context: 8,
            layers: 2,
            heads: 2,
            width: 16,
            dropout: 0.0,
            norm: Norm::Rmsnorm,
            lora: None,
        };
        let gpt = |device: &Device| Gpt::new(&config, &mut Init::new(5, device)).unwrap();
        // Each norm has a weight and no bias: 2 per block and the output's.
        let names: Vec<String> = gpt(&gpu).parameters().into_iter().map(|p| p.0).collect();
        assert!(
            names.contains(&"blocks.1.ln2.weight".to_string()),
            "{names:?}"
        );
        assert!(!names
            .iter()
            .any(|n| n.starts_with("ln_f.bias") || n.ends_with("ln1.bias")));
        let tokens = |d: &Device| Tensor::from_u32(indices(16, 13, 1), &[2, 8], d).unwrap();
        let logits = |d: &Device| gpt(d).forward(&tokens(d)).unwrap();
        let on_gpu = logits(&gpu).to_vec_f64().await.unwrap();
        let on_cpu = logits(&Device::Cpu).to_vec_f64().await.unwrap();
        assert_close(
            "RMSNorm GPT logits, GPU against CPU",
            &on_gpu,
            &on_cpu,
            1e-4,
        );

        // The tiny preset with RMSNorm learns a short text.
        let text = Text::new(&"to be or not to be, that is the question. ".repeat(40)).unwrap();
        let mut setup = Config::defaults(Task::Text, None, None, text.tokenizer.len()).unwrap();
        if let ModelConfig::Gpt(g) = &mut setup.model {
            g.norm = Norm::Rmsnorm;
        }
        let mut s = Session::new(setup, TaskData::Text(text), &gpu).unwrap();
        let first = s.evaluate().await.unwrap().loss;
        for _ in 0..60 {
            s.train_step().unwrap();
        }
        s.check().await.unwrap();
        let after = s.evaluate().await.unwrap().loss;
        assert!(after < first - 0.5, "validation loss {first} -> {after}");
    });
}

/// Routing times a small model on both backends and trains on the faster: with a fake clock
/// that advances more per reading while one backend is timed, that backend looks slower, so
/// the other must be chosen; the chosen session is built afresh (step 0) on its device. A
/// model too large for the CPU to win is not timed, and a chosen backend is taken as chosen.
#[test]
fn routing_trains_on_the_backend_the_clock_says_is_faster() {
    use std::cell::Cell;
    use webgrad::train::routing::{route, Backend, Reason};
    run(async {
        let gpu = common::gpu().await;
        let config = Config::defaults(Task::Spiral, None, None, 0).unwrap();
        for (cpu_tick, gpu_tick, want_cpu) in [(20.0, 200.0, true), (200.0, 20.0, false)] {
            let (tick, clock, cpu_builds) = (Cell::new(0.0), Cell::new(0.0), Cell::new(0));
            let build = |d: &Device| {
                let on_cpu = matches!(d, Device::Cpu);
                cpu_builds.set(cpu_builds.get() + on_cpu as u32);
                tick.set(if on_cpu { cpu_tick } else { gpu_tick });
                Ok(spiral_session(d, &config))
            };
            let now = || {
                clock.set(clock.get() + tick.get());
                clock.get()
            };
            let (session, routed) = route(Backend::Auto, &gpu, build, now).await.unwrap();
            assert_eq!(
                routed.on_cpu(),
                want_cpu,
                "ticks cpu {cpu_tick}, gpu {gpu_tick}"
            );
            assert_eq!(matches!(session.device(), Device::Cpu), want_cpu);
            assert_eq!(session.step, 0, "the chosen session is a fresh one");
            let Reason::Timed { gpu: g, cpu: c } = routed.reason else {
                panic!("a small model is timed, got {:?}", routed.reason);
            };
            // 8 groups of 20 steps in 160 ms, against 1 group in 200 ms.
            let (fast, slow) = if want_cpu { (c, g) } else { (g, c) };
            assert!(
                (fast - 1000.0).abs() < 1e-2 && (slow - 100.0).abs() < 1e-3,
                "{fast} {slow}"
            );
            let said = routed.sentence().unwrap();
            let want = match want_cpu {
                true => "Training on the CPU: faster for this small model (1000 steps a second against 100 on the GPU).",
                false => "Training on the GPU: faster for this model (1000 steps a second against 100 on the CPU).",
            };
            assert!(said.starts_with(want), "{said}");
        }

        // Width 512: about 34 million multiply-adds a step, never timed on the CPU.
        let mut wide = config.clone();
        if let webgrad::train::ModelConfig::Mlp(m) = &mut wide.model {
            m.width = 512;
        }
        let cpu_builds = Cell::new(0);
        let build = |d: &Device| {
            cpu_builds.set(cpu_builds.get() + matches!(d, Device::Cpu) as u32);
            Ok(spiral_session(d, &wide))
        };
        let (_, routed) = route(Backend::Auto, &gpu, build, || 0.0).await.unwrap();
        assert_eq!((routed.reason, cpu_builds.get()), (Reason::Large, 0));

        let spiral = |d: &Device| Ok(spiral_session(d, &config));
        for (choice, offered, want) in [
            (Backend::Cpu, &gpu, (true, Reason::Chosen)),
            (Backend::Gpu, &gpu, (false, Reason::Chosen)),
            (Backend::Gpu, &Device::Cpu, (true, Reason::NoGpuForChoice)),
            (Backend::Auto, &Device::Cpu, (true, Reason::NoGpu)),
        ] {
            let (s, r) = route(choice, offered, spiral, || 0.0).await.unwrap();
            assert_eq!(
                (matches!(s.device(), Device::Cpu), r.reason),
                want,
                "{choice}"
            );
        }
    });
}

/// A text evaluation goes through in parts of at most the training batch (its logits then fit
/// wherever training's do); the parts' losses make the same mean as one pass.
#[test]
fn a_text_evaluation_in_parts_of_the_batch_is_the_same_as_in_one() {
    use webgrad::data::Text;
    use webgrad::nn::Preset;
    run(async {
        let device = common::gpu().await;
        let text = Text::new(&"the quick brown fox jumps over the lazy dog. ".repeat(60)).unwrap();
        let eval_of = |batch: usize| {
            let (device, text) = (device.clone(), text.clone());
            async move {
                let mut config =
                    Config::defaults(Task::Text, None, Some(Preset::Tiny), text.tokenizer.len())
                        .unwrap();
                (config.batch, config.eval_chars) = (batch, 16 * 32 * 6);
                let mut s = Session::new(config, TaskData::Text(text), &device).unwrap();
                s.evaluate().await.unwrap().loss
            }
        };
        // 6 rows an evaluation batch: one pass, then parts of 4 and 2 rows.
        let (whole, parts) = (eval_of(6).await, eval_of(4).await);
        assert!(
            (whole - parts).abs() < 1e-5,
            "{whole} in one pass, {parts} in parts"
        );
    });
}
