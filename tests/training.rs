//! Training sessions: convergence on the 2-D data, determinism, exact resume from a
//! checkpoint, the NaN guard, untrusted checkpoint files, and the CLI's bad-input paths.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_refused, cli, run, spiral_session};
use webgrad::data::{points, PointSet};
use webgrad::optim::RuleKind;
use webgrad::train::{Config, Family, Session, Task, TaskData};
use webgrad::{Device, Tensor};

async fn values(params: &[(String, Tensor)]) -> Vec<Vec<f32>> {
    let mut out = Vec::new();
    for (_, p) in params {
        out.push(p.to_vec().await.unwrap());
    }
    out
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
fn save_load_and_continue_matches_not_stopping() {
    run(async {
        let device = common::gpu().await;
        for optimizer in [RuleKind::Adam, RuleKind::Sgd] {
            let mut config = Config::defaults(Task::Spiral, None, None, 0).unwrap();
            config.optimizer.rule = optimizer.defaults();
            let mut a = spiral_session(&device, &config);
            for _ in 0..12 {
                a.train_step().unwrap();
            }
            let saved = a.save().await.unwrap();
            a.train_step().unwrap();
            let want = a.check().await.unwrap();

            let mut b = spiral_session(&device, &config);
            b.load(&saved).unwrap();
            assert_eq!(b.step, 12);
            b.train_step().unwrap();
            assert_eq!(b.check().await.unwrap(), want, "{optimizer}");
            assert_eq!(
                values(a.parameters()).await,
                values(b.parameters()).await,
                "{optimizer}"
            );
        }
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
        let mut last_good = values(s.parameters()).await;
        let mut stopped = None;
        for _ in 0..20 {
            let before = values(s.parameters()).await;
            s.train_step().unwrap();
            match s.check().await {
                Ok(_) => last_good = before,
                Err(e) => {
                    stopped = Some(e);
                    break;
                }
            }
        }
        let e = stopped.expect("a learning rate of 1e30 must blow the loss up");
        assert!(e.to_string().contains("last good weights"), "{e}");
        let kept = values(s.parameters()).await;
        assert!(kept.iter().flatten().all(|v| v.is_finite()));
        assert_eq!(kept, last_good);
    });
}

#[test]
fn broken_checkpoints_are_refused_and_change_nothing() {
    run(async {
        let device = common::gpu().await;
        let config = Config::defaults(Task::Circles, None, None, 0).unwrap();
        let mut s = spiral_session(&device, &config);
        s.train_step().unwrap();
        let good = s.save().await.unwrap();
        let before = values(s.parameters()).await;

        let mut oversized = good.clone();
        oversized[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let mut renamed = good.clone();
        let at = renamed
            .windows(15)
            .position(|w| w == b"layers.0.weight")
            .unwrap();
        renamed[at..at + 15].copy_from_slice(b"layers.9.weight");
        let mut wider = config.clone();
        let webgrad::train::ModelConfig::Mlp(m) = &mut wider.model else {
            unreachable!()
        };
        m.width = 48;
        let other_model = spiral_session(&device, &wider).save().await.unwrap();
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("empty", vec![], "not a safetensors file"),
            ("truncated", good[..good.len() - 100].to_vec(), "damaged"),
            (
                "header longer than the file",
                oversized,
                "not a safetensors file",
            ),
            (
                "not safetensors",
                b"hello world, not a checkpoint at all".to_vec(),
                "not a safetensors file",
            ),
            ("wrong names", renamed, "layers.0.weight is missing"),
            (
                "other model",
                other_model,
                "different model: width 48 (this model: 32)",
            ),
        ];
        for (what, bytes, expect) in cases {
            let err = s.load(&bytes).expect_err(what).to_string();
            assert!(err.contains(expect), "{what}: {err}");
            assert_eq!(
                values(s.parameters()).await,
                before,
                "{what} changed the weights"
            );
        }
        s.load(&good).unwrap();
    });
}

/// A checkpoint written before the settings became enums (an xor MLP trained 20 steps by
/// `webgrad train --task xor --steps 20 --save`, built at commit 427170c) still reads and loads:
/// the enums keep the names the JSON had.
#[test]
fn a_checkpoint_from_before_the_settings_enums_still_loads() {
    use webgrad::nn::{Activation, MlpConfig};
    use webgrad::train::{Checkpoint, ModelConfig};
    let bytes = include_bytes!("golden/xor_settings_v1.safetensors");
    let ck = Checkpoint::parse(bytes).unwrap();
    assert_eq!(ck.config.task, Task::Xor);
    let ModelConfig::Mlp(MlpConfig { activation, .. }) = &ck.config.model else {
        panic!("an MLP checkpoint, got {:?}", ck.config.model)
    };
    assert_eq!(*activation, Activation::Relu);
    run(async {
        let device = common::gpu().await;
        let config = Config::defaults(Task::Xor, None, None, 0).unwrap();
        let data = points(PointSet::Xor, 2000, config.noise, 0.2, 0).unwrap();
        let mut session = Session::new(config, TaskData::Labelled(data), &device).unwrap();
        session.load(bytes).unwrap();
        assert_eq!(session.step, 20);
        let eval = session.evaluate().await.unwrap();
        assert!(
            eval.accuracy.unwrap() > 0.8,
            "the trained weights came back: {eval:?}"
        );
    });
}

#[test]
fn the_cli_trains_saves_samples_and_rejects_bad_input() {
    let dir = std::env::temp_dir().join(format!("webgrad-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ck = dir.join("xor.safetensors");
    let ck = ck.to_str().unwrap();
    let (code, out, err) = cli(&[
        "train",
        "--task",
        "xor",
        "--steps",
        "40",
        "--eval-every",
        "20",
        "--save",
        ck,
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["step"], 40);
    for key in ["train_loss", "val_loss", "val_acc", "steps_per_s"] {
        assert!(lines[1][key].is_number(), "{key} in {}", lines[1]);
    }
    assert!(std::fs::metadata(ck).unwrap().len() > 0);

    let bad: &[(&[&str], &str)] = &[
        (
            &["train", "--task", "mnist"],
            "invalid value 'mnist' for '--task",
        ),
        (&["train", "--task", "xor", "--lr", "-1"], "learning rate"),
        (&["train", "--task", "xor", "--batch", "0"], "batch size"),
        (
            &["train", "--task", "xor", "--steps", "ten"],
            "invalid value 'ten' for '--steps",
        ),
        (
            &["train", "--task", "xor", "--optimizer", "lbfgs"],
            "invalid value 'lbfgs' for '--optimizer",
        ),
        (
            &["train", "--task", "xor", "--preset", "small"],
            "a preset sizes a GPT; the xor task trains a mlp",
        ),
        (
            &["train", "--task", "text", "--model", "cnn"],
            "the text task cannot use the model cnn",
        ),
        (
            &["train", "--task", "xor", "--colour", "red"],
            "unexpected argument '--colour'",
        ),
        (
            &[
                "train",
                "--task",
                "xor",
                "--load",
                "/nonexistent/x.safetensors",
            ],
            "cannot read",
        ),
        (
            &["train", "--task", "text", "--text", "/nonexistent/t.txt"],
            "cannot read",
        ),
        (
            &["train", "--task", "spiral", "--load", ck],
            "trained on the xor task",
        ),
        (&["sample", "--load", ck], "no text model"),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
        (&["sample"], "required arguments were not provided: --load"),
    ];
    for (args, expect) in bad {
        assert_refused(args, expect);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_cli_explains_itself() {
    let (code, out, _) = cli(&["--help"]);
    assert_eq!(code, 0);
    for command in ["train", "sample", "bench"] {
        assert!(out.contains(command), "--help names {command}: {out}");
    }
    let (code, out, _) = cli(&["train", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("--task <TASK>"), "{out}");
    assert!(
        out.contains("spiral, circles, xor"),
        "the tasks are listed: {out}"
    );
    assert!(out.contains("--eval-every <N>"), "{out}");
    let (code, out, err) = cli(&[]);
    assert_eq!(code, 2, "no command is a mistake");
    assert!(out.is_empty() && err.contains("Usage: webgrad"), "{err}");
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
        let mut setup = Config::defaults(Task::Text, None, None, text.vocab.len()).unwrap();
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

/// The validation losses of the CLI's JSON lines, by step.
fn val_losses(out: &str) -> Vec<(u64, f64)> {
    out.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| (v["step"].as_u64().unwrap(), v["val_loss"].as_f64().unwrap()))
        .collect()
}

#[test]
fn the_cli_keeps_the_best_checkpoint_and_stops_when_patience_runs_out() {
    use webgrad::train::Checkpoint;
    let dir = std::env::temp_dir().join(format!("webgrad-best-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (best, last) = (path("best.safetensors"), path("last.safetensors"));
    // A learning rate this high makes the validation loss bounce, so the best is not the last.
    let run = ["train", "--task", "xor", "--lr", "0.3", "--steps", "300"];
    let saves = ["--eval-every", "10", "--save", &best, "--save-last", &last];
    let (code, out, err) = cli(&[&run[..], &saves[..]].concat());
    assert_eq!(code, 0, "{err}");
    let losses = val_losses(&out);
    let lowest = losses.iter().min_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    let step_of = |p: &str| Checkpoint::parse(&std::fs::read(p).unwrap()).unwrap().step;
    assert_eq!(
        step_of(&best),
        lowest.0,
        "the best checkpoint is the lowest loss's"
    );
    assert_eq!(step_of(&last), 300);
    assert_ne!(
        lowest.0, 300,
        "the run should end past its best: {losses:?}"
    );

    // With patience 3 the run stops at the third evaluation in a row without a new best.
    let (code, out, err) = cli(&[&run[..], &["--eval-every", "10", "--patience", "3"]].concat());
    assert_eq!(code, 0, "{err}");
    let stopped = val_losses(&out);
    let mut since_best = 0;
    let mut expected = losses.len();
    for (i, (_, loss)) in losses.iter().enumerate() {
        let before = losses[..i]
            .iter()
            .map(|l| l.1)
            .fold(f64::INFINITY, f64::min);
        since_best = if *loss < before { 0 } else { since_best + 1 };
        if since_best == 3 {
            expected = i + 1;
            break;
        }
    }
    assert!(
        expected < losses.len(),
        "patience should run out: {losses:?}"
    );
    assert_eq!(stopped.len(), expected, "{err}");
    assert!(err.contains("stopping: no lower validation loss"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
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

/// A checkpoint that PyTorch wrote (tools/train_torch.py under torchrun: two processes with DDP
/// on gloo, 100 steps on from a webgrad checkpoint of step 100; tests/golden/torch_ddp.json is
/// the tool's last line) loads here: its weights give the tool's loss on the tool's probe
/// windows, and a session goes on from its step with its optimizer state and keeps learning.
#[test]
fn a_checkpoint_pytorch_trained_with_ddp_loads_and_trains_on() {
    use webgrad::data::Text;
    use webgrad::nn::Init;
    use webgrad::train::{assign_all, Checkpoint, ModelConfig, Net};
    let root = env!("CARGO_MANIFEST_DIR");
    let bytes = std::fs::read(format!("{root}/tests/golden/torch_ddp.safetensors")).unwrap();
    let said = std::fs::read_to_string(format!("{root}/tests/golden/torch_ddp.json")).unwrap();
    let said: serde_json::Value = serde_json::from_str(&said).unwrap();
    let text = std::fs::read(format!("{root}/web/data/shakespeare.txt.gz")).unwrap();
    let text = Text::from_gzip(&text).unwrap();
    run(async {
        let device = common::gpu().await;
        let ck = Checkpoint::parse(&bytes).unwrap();
        assert_eq!(ck.step, said["step"].as_u64().unwrap());
        let ModelConfig::Gpt(g) = &ck.config.model else {
            panic!("a GPT checkpoint, got {:?}", ck.config.model);
        };
        let net = Net::new(&ck.config.model, &mut Init::new(0, &device)).unwrap();
        let params = net.parameters();
        assign_all(&params, &ck.values_for(&params).unwrap()).unwrap();

        // The tool's probe: the validation split's first windows, side by side.
        let (n, c) = (said["probe_windows"].as_u64().unwrap() as usize, g.context);
        let x = text.val[..n * c].to_vec();
        let y: Vec<u32> = (0..n)
            .flat_map(|i| text.val[i * c + 1..(i + 1) * c + 1].to_vec())
            .collect();
        let x = Tensor::from_u32(x, &[n, c], &device).unwrap();
        let y = Tensor::from_u32(y, &[n * c], &device).unwrap();
        let loss = net.forward(&x).unwrap().cross_entropy(&y).unwrap();
        let loss = loss.to_vec().await.unwrap()[0] as f64;
        let want = said["probe_loss"].as_f64().unwrap();
        assert!((loss - want).abs() < 1e-4, "loss {loss}, PyTorch's {want}");

        let mut session = Session::new(ck.config.clone(), TaskData::Text(text), &device).unwrap();
        session.load(&bytes).unwrap();
        assert_eq!(session.step, 200);
        for _ in 0..10 {
            session.train_step().unwrap();
        }
        let train = session.check().await.unwrap();
        let val = session.evaluate().await.unwrap().loss;
        // Chance is ln 84 = 4.43 nats; the webgrad checkpoint PyTorch started from was at 2.50.
        assert_eq!(session.step, 210);
        assert!(train < 2.6 && val < 2.5, "train {train}, validation {val}");
    });
}

/// LoRA fine-tuning: a base GPT's checkpoint loads frozen under new adapters (step 0, the
/// base's validation loss, since B starts at zero); training moves only the adapters and
/// lowers the loss; the session's checkpoint holds the base unchanged and the adapters, and
/// loads back into a LoRA session with the same loss. The adapters use PEFT's names.
#[test]
fn lora_fine_tunes_a_base_checkpoint_training_only_the_adapters() {
    use webgrad::data::Text;
    use webgrad::nn::LoraConfig;
    use webgrad::train::{Checkpoint, ModelConfig};
    run(async {
        let gpu = common::gpu().await;
        let text = Text::new(&"to be or not to be, that is the question. ".repeat(40)).unwrap();
        let base_config = Config::defaults(Task::Text, None, None, text.vocab.len()).unwrap();
        let mut base =
            Session::new(base_config.clone(), TaskData::Text(text.clone()), &gpu).unwrap();
        for _ in 0..20 {
            base.train_step().unwrap();
        }
        base.check().await.unwrap();
        let base_loss = base.evaluate().await.unwrap().loss;
        let base_bytes = base.save().await.unwrap();

        let mut config = base_config.clone();
        if let ModelConfig::Gpt(g) = &mut config.model {
            g.lora = Some(LoraConfig {
                rank: 4,
                alpha: 8.0,
            });
        }
        let mut s = Session::new(config.clone(), TaskData::Text(text.clone()), &gpu).unwrap();
        let names: Vec<&str> = s.parameters().iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names.len(),
            8,
            "two adapters on each of four projections: {names:?}"
        );
        assert!(
            names.contains(&"blocks.0.attn.qkv.lora_A.weight"),
            "{names:?}"
        );
        s.load(&base_bytes).unwrap();
        assert_eq!(s.step, 0);
        let first = s.evaluate().await.unwrap().loss;
        assert!(
            (first - base_loss).abs() < 1e-5,
            "{first} vs the base's {base_loss}"
        );
        for _ in 0..40 {
            s.train_step().unwrap();
        }
        s.check().await.unwrap();
        let after = s.evaluate().await.unwrap().loss;
        assert!(after < first - 0.2, "validation loss {first} -> {after}");
        // The page's second curve: the loss on another text of the vocabulary, the same
        // windows as an evaluation of that text; a text of other characters is refused.
        let mut on_text = s.loss_on(&text).await.unwrap();
        assert!((on_text - after).abs() < 1e-5, "{on_text} vs {after}");
        let other = Text::with_vocab(&"not to be, be not, to be. ".repeat(20), text.vocab.clone());
        on_text = s.loss_on(&other.unwrap()).await.unwrap();
        assert!(
            on_text.is_finite() && (on_text - after).abs() > 1e-3,
            "{on_text}"
        );
        let foreign = Text::new(&"xyz ".repeat(100)).unwrap();
        assert!(s.loss_on(&foreign).await.is_err());

        let saved = s.save().await.unwrap();
        let (was, now) = (
            Checkpoint::parse(&base_bytes).unwrap(),
            Checkpoint::parse(&saved).unwrap(),
        );
        for name in ["blocks.0.attn.qkv.weight", "tok_emb.weight", "ln_f.bias"] {
            assert_eq!(was.tensors[name], now.tensors[name], "{name} is frozen");
        }
        let b = &now.tensors["blocks.0.mlp.proj.lora_B.weight"].1;
        assert!(b.iter().any(|v| *v != 0.0), "lora_B trained away from zero");
        let mut again = Session::new(config, TaskData::Text(text.clone()), &gpu).unwrap();
        again.load(&saved).unwrap();
        assert_eq!(again.step, 40);
        let reloaded = again.evaluate().await.unwrap().loss;
        assert!((reloaded - after).abs() < 1e-5, "{reloaded} vs {after}");

        // The adapters alone, under PEFT's names, hold the trained values.
        let adapters = s.save_adapters().await.unwrap();
        let file = safetensors::SafeTensors::deserialize(&adapters).unwrap();
        let mut names = file.names();
        names.sort();
        assert_eq!(names.len(), 8, "{names:?}");
        let peft = file
            .tensor("base_model.model.blocks.0.mlp.proj.lora_B.weight")
            .unwrap();
        let values: Vec<f32> = peft
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(&values, b);
        // The merged model, a plain GPT, gives the fine-tuned loss.
        let merged = s.save_merged().await.unwrap();
        let mut plain = Session::new(base_config, TaskData::Text(text), &gpu).unwrap();
        plain.load(&merged).unwrap();
        let merged_loss = plain.evaluate().await.unwrap().loss;
        assert!(
            (merged_loss - after).abs() < 1e-4,
            "merged {merged_loss} vs {after}"
        );
        assert!(base.save_adapters().await.is_err(), "no adapters to save");
    });
}

/// The CLI fine-tunes a base GPT on the user's own text with LoRA: the model's sizes come from
/// the base file and the text is read with its vocabulary, the validation loss on that text
/// falls, and the adapters and the merged model are written. A text with a character the
/// model does not know is refused with a sentence naming it.
#[test]
fn the_cli_fine_tunes_a_checkpoint_on_a_text_with_lora() {
    let dir = std::env::temp_dir().join(format!("webgrad-lora-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let line = "whether tis nobler in the mind to suffer the slings and arrows of fortune. ";
    std::fs::write(path("mine.txt"), line.repeat(30)).unwrap();
    std::fs::write(path("bad.txt"), line.repeat(30) + "é").unwrap();
    let base = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/torch_ddp.safetensors"
    );
    let (adapters, merged, text) = (
        path("adapters.safetensors"),
        path("merged.safetensors"),
        path("mine.txt"),
    );
    let args = [
        "train",
        "--task",
        "text",
        "--text",
        &text,
        "--load",
        base,
        "--lora-rank",
        "8",
        "--steps",
        "40",
        "--eval-every",
        "10",
        "--save-adapters",
        &adapters,
        "--save-merged",
        &merged,
    ];
    let (code, out, err) = cli(&args);
    assert_eq!(code, 0, "{err}");
    let losses = val_losses(&out);
    let (first, last) = (losses[0].1, losses.last().unwrap().1);
    assert!(last < first - 0.3, "validation loss {first} -> {last}");
    for file in [&adapters, &merged] {
        assert!(std::fs::metadata(file).unwrap().len() > 0, "{file} written");
    }
    let peft: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path("adapter_config.json")).unwrap()).unwrap();
    assert_eq!(
        (peft["peft_type"].as_str(), peft["r"].as_u64()),
        (Some("LORA"), Some(8))
    );
    let bad = path("bad.txt");
    assert_refused(
        &[
            "train",
            "--task",
            "text",
            "--text",
            &bad,
            "--load",
            base,
            "--lora-rank",
            "8",
        ],
        "the character 'é' is not one the model knows",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
