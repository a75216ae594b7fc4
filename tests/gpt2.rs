//! GPT-2 as Hugging Face publishes it (src/train/hf_gpt2.rs): a small model in its layout,
//! written with its config.json, is sampled by the CLI through GPT-2's tokenizer; a prompt
//! outside the model's vocabulary is refused with a sentence.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::gpt2_files::written;
use webgrad::Device;

#[test]
fn the_cli_samples_a_gpt2_file_through_gpt2s_tokenizer() {
    let dir = written(50257, "full");
    let model = dir.join("model.safetensors");
    let model = model.to_str().unwrap();
    let args = [
        "sample",
        "--load",
        model,
        "--prompt",
        "Hello, world",
        "--tokens",
        "8",
    ];
    let (code, out, err) = common::cli(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Hello, world"), "{out}");
    assert!(
        out.len() > "Hello, world\n".len(),
        "nothing sampled: {out:?}"
    );
    // The same seed, the same text.
    assert_eq!(common::cli(&args).1, out);

    // A config.json that disagrees with the weights is refused.
    std::fs::write(dir.join("config.json"), r#"{"n_layer": 2}"#).unwrap();
    common::assert_refused(&args, "config.json gives n_layer 2, the weights 1");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_prompt_outside_a_small_vocabulary_is_refused() {
    let dir = written(50, "small");
    let model = dir.join("model.safetensors");
    let model = model.to_str().unwrap();
    common::assert_refused(
        &["sample", "--load", model, "--prompt", "Hello"],
        "the prompt's token 15496 is outside this model's vocabulary of 50",
    );
    // An empty prompt starts from token 0 and samples.
    let (code, _, err) = common::cli(&["sample", "--load", model, "--tokens", "4"]);
    assert_eq!(code, 0, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tiny GPT-2 (2 blocks, width 32 in 4 heads, 96 tokens) made and saved by Hugging Face's
/// transformers, with its fp32 logits for two sequences (tools/gpt2_golden.py).
const TINY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/gpt2_tiny");

#[test]
fn transformers_gpt2_gives_the_same_logits_here() {
    use webgrad::nn::Model;
    use webgrad::train::{load_hf, HfGpt2};
    let read = |name: &str| std::fs::read(format!("{TINY}/{name}")).unwrap();
    let config = String::from_utf8(read("config.json")).unwrap();
    let file = HfGpt2::parse(&read("model.safetensors"), Some(&config)).unwrap();
    assert_eq!(
        (file.config.layers, file.config.heads, file.config.width),
        (2, 4, 32)
    );
    let golden: serde_json::Value = serde_json::from_slice(&read("golden.json")).unwrap();
    let tokens: Vec<Vec<u32>> = serde_json::from_value(golden["tokens"].clone()).unwrap();
    let want: Vec<Vec<Vec<f64>>> = serde_json::from_value(golden["logits"].clone()).unwrap();
    common::run(async {
        for device in [Device::Cpu, common::gpu().await] {
            let gpt = load_hf(&file, &device).unwrap();
            let t = tokens[0].len();
            let flat: Vec<u32> = tokens.concat();
            let x = webgrad::Tensor::from_u32(flat, &[tokens.len(), t], &device).unwrap();
            let got = gpt.forward(&x).unwrap().to_vec_f64().await.unwrap();
            let want: Vec<f64> = want.concat().concat();
            // Within 1e-4 of the logits' size.
            common::assert_close("logits", &got, &want, 1e-4);
        }
    });
}
