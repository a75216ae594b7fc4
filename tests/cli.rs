//! The command-line trainer: training, saving and sampling, its bad-input paths, its help,
//! early stopping with the best checkpoint kept, and LoRA fine-tuning on a text.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_refused, cli};

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

/// `webgrad wgsl` prints a shader as the GPU gets it (the emulated GPUs' product with its
/// registers unrolled, here 2 rows × 1 vec4 a lane) and refuses a slot the shader does not take.
#[test]
fn wgsl_prints_a_kernel_as_compiled_and_refuses_an_unknown_slot() {
    let shader = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/matmul_regs.wgsl");
    let epilogue = [
        "BIAS=matmul_no_bias",
        "RESIDUAL=matmul_no_residual",
        "STORE=matmul_store_f32",
        "RES=3",
        "OUT=3",
        "B_TYPE=f32",
    ];
    let args = [
        &["wgsl", shader, "ROWS=2", "COLS=4", "VECS=1"][..],
        &epilogue,
    ]
    .concat();
    let (code, out, err) = cli(&args);
    assert_eq!(code, 0, "{err}");
    for line in [
        "var acc1_0 = vec4<f32>(0.0);",
        "acc0_0 = fma(av0, bv0, acc0_0);",
    ] {
        assert!(out.contains(line), "no `{line}` in:\n{out}");
    }
    assert!(!out.contains("acc2_0") && !out.contains("{{"), "{out}");
    let args = [
        &["wgsl", shader, "ROWS=2", "COLS=4", "VECS=1", "WIDTH=3"][..],
        &epilogue,
    ]
    .concat();
    assert_refused(&args, "the slot WIDTH is not one the shader takes");
}

/// 20,000 distinct characters (Chinese) at a batch of 64: its logits, 164 MB, are more than the
/// 128 MiB lavapipe binds, and the output layer's loss goes through them in chunks of rows
/// (`Tensor::linear_cross_entropy`), so it trains, from the loss of a uniform guess.
#[test]
fn a_text_whose_logits_exceed_a_binding_trains_in_chunks() {
    let dir = std::env::temp_dir().join(format!("webgrad-cjk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cjk: String = (0..20_000u32)
        .map(|i| char::from_u32(0x4e00 + i).unwrap())
        .cycle()
        .take(60_000)
        .collect();
    let text = dir.join("cjk.txt");
    std::fs::write(&text, cjk).unwrap();
    let text = text.to_str().unwrap();
    let args = ["train", "--task", "text", "--text", text, "--batch", "64"];
    let (code, out, err) = cli(&[&args[..], &["--steps", "1", "--eval-every", "1"]].concat());
    assert_eq!(code, 0, "{err}");
    let (_, loss) = val_losses(&out)[0];
    let uniform = (20_000f64).ln();
    assert!(
        (loss - uniform).abs() < 0.1,
        "validation loss {loss}, a uniform guess's {uniform}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--recompute true` trains the same (the same validation losses: the blocks run again in
/// backward instead of keeping their activations; tests/recompute.rs checks the memory), and
/// is refused where there are no blocks.
#[test]
fn recomputing_the_blocks_trains_the_same() {
    let run = |recompute: &str| {
        let args = [
            "train",
            "--task",
            "text",
            "--steps",
            "2",
            "--eval-every",
            "2",
        ];
        let (code, out, err) =
            cli(&[&args[..], &["--batch", "8", "--recompute", recompute]].concat());
        assert_eq!(code, 0, "{err}");
        val_losses(&out)
    };
    assert_eq!(run("true"), run("false"), "the validation losses");
    assert_refused(
        &["train", "--task", "spiral", "--recompute", "true"],
        "recompute",
    );
}
