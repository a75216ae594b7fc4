//! Fine-tuning a GPT-2 as Hugging Face publishes it with LoRA from the CLI (src/bin/webgrad/
//! lora.rs): the text read as GPT-2's tokens, the loss going down, and the files it leaves
//! under Hugging Face's names: PEFT's adapters with their adapter_config.json, and the merged
//! model as transformers' model.safetensors with its config.json, W + (α/r)·B·A stored
//! [in, out] as transformers' Conv1D stores it.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::gpt2_files::{written, written_scaled};
use safetensors::SafeTensors;
use std::path::Path;

/// A tensor's shape and f32 values in a safetensors file.
fn tensor(bytes: &[u8], name: &str) -> (Vec<usize>, Vec<f32>) {
    let st = SafeTensors::deserialize(bytes).unwrap();
    let view = st.tensor(name).unwrap_or_else(|_| panic!("{name} missing"));
    let values = view
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    (view.shape().to_vec(), values)
}

/// The validation losses of a CLI run's JSON lines.
fn val_losses(out: &str) -> Vec<f64> {
    out.lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["val_loss"]
                .as_f64()
                .unwrap()
        })
        .collect()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_cli_fine_tunes_a_gpt2_file_and_writes_peft_and_transformers_files() {
    let dir = written_scaled(50257, "lora", 5.0);
    let base = dir.join("model.safetensors");
    let text = dir.join("mine.txt");
    std::fs::write(
        &text,
        "The cat sat on the mat, and the dog sat on the log. ".repeat(60),
    )
    .unwrap();
    for sub in ["adapters", "merged"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let adapters = dir.join("adapters/adapter_model.safetensors");
    let merged = dir.join("merged/model.safetensors");
    let checkpoint = dir.join("run.safetensors");
    let (code, out, err) = common::cli(&[
        "train",
        "--task",
        "text",
        "--load",
        path(&base),
        "--lora-rank",
        "4",
        "--lora-alpha",
        "32",
        "--text",
        path(&text),
        "--steps",
        "40",
        "--eval-every",
        "10",
        "--window",
        "32",
        "--batch",
        "4",
        "--lr",
        "0.01",
        "--save-adapters",
        path(&adapters),
        "--save-merged",
        path(&merged),
        "--save-last",
        path(&checkpoint),
    ]);
    assert_eq!(code, 0, "{err}");
    // The validation loss falls at every evaluation, by six times its noise (0.005) in all.
    // Slowly: a random base's activations are small and its output layer frozen, so that
    // adapters of rank 4 move it little in 40 steps (GPT-2's own weights learn far faster).
    let losses = val_losses(&out);
    assert_eq!(losses.len(), 4, "{out}");
    assert!(
        losses.windows(2).all(|w| w[1] < w[0]) && losses[3] < losses[0] - 0.03,
        "validation losses {losses:?}"
    );

    // PEFT's names and settings for transformers' GPT-2.
    let peft: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("adapters/adapter_config.json")).unwrap())
            .unwrap();
    assert_eq!(peft["fan_in_fan_out"], true);
    assert_eq!(
        peft["target_modules"],
        serde_json::json!(["c_attn", "c_proj", "c_fc"])
    );
    assert_eq!(
        (peft["r"].as_u64(), peft["lora_alpha"].as_f64()),
        (Some(4), Some(32.0))
    );
    let adapter_bytes = std::fs::read(&adapters).unwrap();
    let names = SafeTensors::deserialize(&adapter_bytes)
        .unwrap()
        .names()
        .len();
    assert_eq!(names, 8, "A and B of 4 projections in one block");
    let prefix = "base_model.model.transformer.h.0.attn.c_attn";
    let (a_shape, a) = tensor(&adapter_bytes, &format!("{prefix}.lora_A.weight"));
    let (b_shape, b) = tensor(&adapter_bytes, &format!("{prefix}.lora_B.weight"));
    assert_eq!((a_shape, b_shape.clone()), (vec![4, 64], vec![192, 4]));
    assert!(b.iter().any(|v| *v != 0.0), "B trained away from zero");

    // The merged c_attn is the base's plus 8·B·A (α / r), stored [in, out] as Conv1D's.
    let (merged_bytes, base_bytes) = (
        std::fs::read(&merged).unwrap(),
        std::fs::read(&base).unwrap(),
    );
    let (shape, got) = tensor(&merged_bytes, "h.0.attn.c_attn.weight");
    let (_, w) = tensor(&base_bytes, "h.0.attn.c_attn.weight");
    assert_eq!(shape, [64, 192]);
    let worst = (0..64 * 192)
        .map(|at| {
            let (i, o) = (at / 192, at % 192);
            let delta: f32 = (0..4).map(|k| b[o * 4 + k] * a[k * 64 + i]).sum();
            (got[at] - (w[at] + 8.0 * delta)).abs()
        })
        .fold(0.0, f32::max);
    assert!(worst < 1e-5, "merged weight off by {worst}");
    assert_eq!(
        tensor(&merged_bytes, "wte.weight"),
        tensor(&base_bytes, "wte.weight")
    );
    let config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("merged/config.json")).unwrap()).unwrap();
    assert_eq!(
        (config["n_embd"].as_u64(), config["vocab_size"].as_u64()),
        (Some(64), Some(50257))
    );

    // The merged model and the run's own checkpoint both write text through GPT-2's tokens.
    for from in [&merged, &checkpoint] {
        let (code, out, err) = common::cli(&[
            "sample",
            "--load",
            path(from),
            "--prompt",
            "The cat",
            "--tokens",
            "12",
            "--temperature",
            "0.1",
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.starts_with("The cat") && out.len() > "The cat".len(),
            "{out:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gpt2_is_refused_where_it_cannot_be_fine_tuned() {
    let dir = written(50257, "lora-refusals");
    let base = dir.join("model.safetensors");
    common::assert_refused(
        &[
            "train",
            "--task",
            "text",
            "--load",
            path(&base),
            "--steps",
            "1",
        ],
        "is a GPT-2, which fine-tunes with LoRA here: add --lora-rank 8",
    );
    common::assert_refused(
        &[
            "train",
            "--task",
            "text",
            "--load",
            path(&base),
            "--lora-rank",
            "4",
            "--window",
            "65",
        ],
        "a training window of 65 tokens does not fit the model's context of 64",
    );
    let small = written(50, "lora-small");
    let small_base = small.join("model.safetensors");
    common::assert_refused(
        &[
            "train",
            "--task",
            "text",
            "--load",
            path(&small_base),
            "--lora-rank",
            "4",
        ],
        "its vocabulary has 50 tokens, fewer than GPT-2's 50,257",
    );
    for d in [dir, small] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

/// Adapters PEFT made on the tiny GPT-2 of tests/data/gpt2_tiny, the model with them merged,
/// and PEFT's logits of the adapted model (tools/gpt2_peft_golden.py).
const PAIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gpt2_tiny_lora");
const TINY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gpt2_tiny");

#[test]
fn peft_adapters_and_the_model_they_merge_into_give_peft_s_logits() {
    use webgrad::nn::Model;
    use webgrad::train::{load_hf, load_hf_adapted, HfGpt2, PeftAdapters};
    use webgrad::Device;
    let read = |path: String| std::fs::read(path).unwrap();
    let text = |path: String| String::from_utf8(read(path)).unwrap();
    let base = HfGpt2::parse(
        &read(format!("{TINY}/model.safetensors")),
        Some(&text(format!("{TINY}/config.json"))),
    )
    .unwrap();
    let adapters = PeftAdapters::parse(
        &read(format!("{PAIR}/adapter_model.safetensors")),
        &text(format!("{PAIR}/adapter_config.json")),
    )
    .unwrap();
    assert_eq!((adapters.lora.rank, adapters.lora.alpha), (4, 8.0));
    let merged = HfGpt2::parse(
        &read(format!("{PAIR}/merged/model.safetensors")),
        Some(&text(format!("{PAIR}/merged/config.json"))),
    )
    .unwrap();
    let golden: serde_json::Value =
        serde_json::from_slice(&read(format!("{PAIR}/golden.json"))).unwrap();
    let tokens: Vec<Vec<u32>> = serde_json::from_value(golden["tokens"].clone()).unwrap();
    let want: Vec<Vec<Vec<f64>>> = serde_json::from_value(golden["logits"].clone()).unwrap();
    let want: Vec<f64> = want.concat().concat();
    common::run(async {
        for device in [Device::Cpu, common::gpu().await] {
            let x = webgrad::Tensor::from_u32(
                tokens.concat(),
                &[tokens.len(), tokens[0].len()],
                &device,
            )
            .unwrap();
            let adapted = load_hf_adapted(&base, &adapters, &device).unwrap();
            let got = adapted.forward(&x).unwrap().to_vec_f64().await.unwrap();
            common::assert_close("adapted logits", &got, &want, 1e-4);
            let plain = load_hf(&merged, &device).unwrap();
            let got = plain.forward(&x).unwrap().to_vec_f64().await.unwrap();
            common::assert_close("merged logits", &got, &want, 1e-4);
            // The adapters matter: the base alone gives other logits.
            let bare = load_hf(&base, &device).unwrap();
            let got = bare.forward(&x).unwrap().to_vec_f64().await.unwrap();
            let moved = got.iter().zip(&want).any(|(a, b)| (a - b).abs() > 1e-2);
            assert!(moved, "the adapters changed nothing");
        }
    });
}

#[test]
fn the_cli_samples_gpt2_with_peft_s_adapters_on_it() {
    let (base, adapters) = (
        format!("{TINY}/model.safetensors"),
        format!("{PAIR}/adapter_model.safetensors"),
    );
    let with = |adapters: &str| {
        common::cli(&[
            "sample",
            "--load",
            &base,
            "--adapters",
            adapters,
            "--tokens",
            "8",
        ])
    };
    let (code, out, err) = with(&adapters);
    assert_eq!(code, 0, "{err}");
    assert!(!out.trim().is_empty(), "nothing sampled");
    // The adapters change what it writes, from the same seed.
    let (_, bare, _) = common::cli(&["sample", "--load", &base, "--tokens", "8"]);
    assert_ne!(out, bare);
    // PEFT's settings must be beside the adapters.
    common::assert_refused(
        &[
            "sample",
            "--load",
            &base,
            "--adapters",
            &base,
            "--tokens",
            "8",
        ],
        "adapter_config.json, which PEFT writes beside",
    );
}
