//! Bad input, table by table: CLI arguments, places to save, and checkpoint files built here.
//! Each case asserts the sentence, the exit status, and that nothing was lost.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_refused, cli, run, train_xor};
use safetensors::{tensor::TensorView, Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use webgrad::data::Text;
use webgrad::nn::Preset;
use webgrad::train::{Config, Session, Task, TaskData};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("webgrad-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn flags_that_do_not_apply_and_unknown_names_are_refused() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["train", "--task", "spiral", "--text", "poem.txt"],
            "--text applies to the text task",
        ),
        (
            &["train", "--task", "digits", "--dropout", "0.1"],
            "--dropout applies to the GPT",
        ),
        (
            &["train", "--task", "xor", "--preset", "tiny"],
            "a preset sizes a GPT",
        ),
        (
            &["bench", "--only", "nope"],
            "--only \"nope\" names no workload",
        ),
        (
            &[
                "train", "--task", "text", "--preset", "nanochar", "--batch", "4000000",
            ],
            "lower the batch, context",
        ),
        // More than the text's 4.5 M characters: refused as such, not by the memory it takes.
        (
            &[
                "train",
                "--task",
                "text",
                "--preset",
                "nanochar",
                "--batch",
                "100000000",
            ],
            "is larger than the",
        ),
    ];
    for (args, expect) in cases {
        assert_refused(args, expect);
    }
}

#[test]
fn a_text_file_that_is_not_text_is_refused_with_its_reason() {
    let dir = scratch("text");
    let cases: &[(&str, &[u8], &str)] = &[
        (
            "image.png",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
            "not UTF-8 text (byte 0",
        ),
        ("nul.txt", b"plain words then a \0 byte", "byte 19 is a NUL"),
        ("short.txt", b"too short", "9 characters are too few"),
        ("empty.txt", b"", "0 characters are too few"),
    ];
    for (name, bytes, expect) in cases {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        assert_refused(&["train", "--task", "text", "--text", s(&path)], expect);
        assert_eq!(&std::fs::read(&path).unwrap(), bytes, "{name} was changed");
    }
}

#[test]
fn a_place_that_cannot_be_saved_to_is_refused_before_training() {
    let dir = scratch("save");
    let kept = dir.join("read-only.safetensors");
    std::fs::write(&kept, b"an earlier run").unwrap();
    let mut p = std::fs::metadata(&kept).unwrap().permissions();
    p.set_readonly(true);
    std::fs::set_permissions(&kept, p).unwrap();
    let dangling = dir.join("dangling");
    std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
    let missing = dir.join("no/such/folder.safetensors");
    let cases: &[(&str, &str, &str)] = &[
        ("--save", "", "the path is empty"),
        ("--save", s(&dir), "it is a directory"),
        ("--save", s(&missing), "does not exist"),
        ("--save", "/dev/null", "not a regular file"),
        (
            "--save-last",
            s(&dangling),
            "symbolic link to a file that does not exist",
        ),
        ("--save-last", s(&kept), "read-only"),
    ];
    for (flag, path, expect) in cases {
        assert_refused(
            &["train", "--task", "xor", "--steps", "20", flag, path],
            expect,
        );
    }
    assert_eq!(std::fs::read(&kept).unwrap(), b"an earlier run");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "a file was left behind"
    );
}

#[test]
fn a_run_diverged_before_any_evaluation_passed_saves_nothing() {
    // Its only "good" weights are the ones it started from: writing them would pass untrained
    // weights off as the run's (they were labelled with the step it reached).
    let dir = scratch("diverged");
    let last = dir.join("last.safetensors");
    let (code, _, err) = cli(&[
        "train",
        "--task",
        "xor",
        "--optimizer",
        "sgd",
        "--lr",
        "1e30",
        "--eval-every",
        "1",
        "--save-last",
        s(&last),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the run diverged"), "{err}");
    assert!(
        err.contains(&format!("nothing was written to {}", s(&last))),
        "{err}"
    );
    assert!(!last.exists(), "a diverged run wrote {}", s(&last));
}

/// A checkpoint's bytes with its metadata changed by `edit` and its tensors by `values`.
fn rewritten(
    bytes: &[u8],
    edit: impl Fn(&mut HashMap<String, String>),
    values: impl Fn(&str, &mut Vec<f32>),
) -> Vec<u8> {
    let st = SafeTensors::deserialize(bytes).unwrap();
    let (_, meta) = SafeTensors::read_metadata(bytes).unwrap();
    let mut meta = meta.metadata().clone().unwrap();
    edit(&mut meta);
    let data: Vec<(String, Vec<usize>, Vec<u8>)> = st
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let mut v: Vec<f32> = view
                .data()
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            values(&name, &mut v);
            let b = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            (name, view.shape().to_vec(), b)
        })
        .collect();
    let views = data.iter().map(|(n, sh, b)| {
        (
            n.clone(),
            TensorView::new(Dtype::F32, sh.clone(), b).unwrap(),
        )
    });
    safetensors::serialize(views, Some(meta)).unwrap()
}

/// A tiny GPT's checkpoint, saved after one step on a small text.
fn text_checkpoint() -> Vec<u8> {
    run(async {
        let device = common::gpu().await;
        let text = Text::new(&"to be or not to be, that is the question. ".repeat(200)).unwrap();
        let vocab = text.tokenizer.len();
        let config = Config::defaults(Task::Text, None, Some(Preset::Tiny), vocab).unwrap();
        let mut s = Session::new(config, TaskData::Text(text), &device).unwrap();
        s.train_step().unwrap();
        s.check().await.unwrap();
        s.save().await.unwrap()
    })
}

#[test]
fn hostile_checkpoints_get_their_own_sentence() {
    let dir = scratch("checkpoints");
    let good = text_checkpoint();
    let config = |meta: &HashMap<String, String>| -> serde_json::Value {
        serde_json::from_str(&meta["config"]).unwrap()
    };
    let huge = rewritten(
        &good,
        |m| {
            let mut c = config(m);
            c["model"]["Gpt"]["layers"] = 1_000_000.into();
            m.insert("config".into(), c.to_string());
        },
        |_, _| {},
    );
    let nan = rewritten(
        &good,
        |_| {},
        |name, v| {
            if name == "blocks.0.mlp.fc.weight" {
                v[3] = f32::NAN;
            }
        },
    );
    let short_vocab = rewritten(
        &good,
        |m| {
            m.insert("vocab".into(), "[\" \",\"a\"]".into());
        },
        |_, _| {},
    );
    let unsorted = rewritten(
        &good,
        |m| {
            let mut chars: Vec<char> = serde_json::from_str(&m["vocab"]).unwrap();
            chars.swap(0, 1);
            m.insert("vocab".into(), serde_json::to_string(&chars).unwrap());
        },
        |_, _| {},
    );
    let no_vocab = rewritten(
        &good,
        |m| {
            m.remove("vocab");
        },
        |_, _| {},
    );
    let png = [
        &[0x89u8, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a][..],
        &[0u8; 64],
    ]
    .concat();
    let random: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("huge", huge, "lower the width or layers"),
        ("nan", nan, "blocks.0.mlp.fc.weight holds NaN"),
        (
            "short vocabulary",
            short_vocab,
            "its vocabulary has 2 characters",
        ),
        ("unsorted vocabulary", unsorted, "not in order"),
        ("no vocabulary", no_vocab, "no vocabulary"),
        ("png", png, "not a safetensors file"),
        ("random", random, "not a safetensors file"),
        ("empty", vec![], "not a safetensors file"),
        ("truncated", good[..good.len() - 10].to_vec(), "damaged"),
    ];
    for (name, bytes, expect) in &cases {
        let path = dir.join(format!("{name}.safetensors"));
        std::fs::write(&path, bytes).unwrap();
        let start = std::time::Instant::now();
        assert_refused(&["sample", "--load", s(&path)], expect);
        assert!(
            start.elapsed().as_secs() < 30,
            "{name} took {:?}",
            start.elapsed()
        );
        assert_eq!(&std::fs::read(&path).unwrap(), bytes, "{name} was changed");
    }
    let path = dir.join("good.safetensors");
    std::fs::write(&path, &good).unwrap();
    let (code, out, err) = cli(&["sample", "--load", s(&path), "--tokens", "20"]);
    assert_eq!(code, 0, "the unedited checkpoint samples: {err}");
    assert!(!out.trim().is_empty());
}

#[test]
fn a_broken_optimizer_state_still_samples_and_trains_with_a_fresh_optimizer() {
    let dir = scratch("state");
    let nan_state = |name: &str, v: &mut Vec<f32>| {
        if name.starts_with("optimizer.") {
            v[0] = f32::NAN;
        }
    };
    let text = dir.join("text.safetensors");
    std::fs::write(&text, rewritten(&text_checkpoint(), |_| {}, nan_state)).unwrap();
    let (code, out, err) = cli(&["sample", "--load", s(&text), "--tokens", "20"]);
    assert_eq!(code, 0, "its weights are fine to sample: {err}");
    assert!(!out.trim().is_empty());

    let xor = dir.join("xor.safetensors");
    let (code, _, err) = train_xor("20", &["--save", s(&xor)]);
    assert_eq!(code, 0, "{err}");
    let broken = rewritten(&std::fs::read(&xor).unwrap(), |_| {}, nan_state);
    std::fs::write(&xor, broken).unwrap();
    let (code, _, err) = train_xor("40", &["--load", s(&xor)]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("optimizer.") && err.contains("the optimizer starts afresh"),
        "{err}"
    );
}
