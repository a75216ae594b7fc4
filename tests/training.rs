//! Training sessions: convergence on the 2-D data, determinism, exact resume from a
//! checkpoint, the NaN guard, untrusted checkpoint files, and the CLI's bad-input paths.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::run;
use webgrad::data::{points, PointSet};
use webgrad::optim::RuleKind;
use webgrad::train::{Config, Family, Session, Task, TaskData};
use webgrad::{Device, Tensor};

fn spiral_session(device: &Device, config: &Config) -> Session {
    let data = points(PointSet::Spiral, 2000, config.noise, 0.2, config.seed).unwrap();
    Session::new(config.clone(), TaskData::Labelled(data), device).unwrap()
}

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
            ("empty", vec![], "too short"),
            (
                "truncated",
                good[..good.len() - 100].to_vec(),
                "not a valid safetensors",
            ),
            ("oversized header", oversized, "more than the"),
            (
                "not safetensors",
                b"hello world, not a checkpoint at all".to_vec(),
                "header",
            ),
            ("wrong names", renamed, "layers.0.weight is missing"),
            ("other model", other_model, "different model"),
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

/// Runs the CLI; returns (exit status, stdout, stderr).
fn cli(args: &[&str]) -> (i32, String, String) {
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
        let (code, out, err) = cli(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{args:?}: one line, got {err}"
        );
        assert!(
            err.lines().next().unwrap().contains(expect),
            "{args:?}: {err}"
        );
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
