//! The footprint of each model family against the sizes that make it, and the sentences that
//! name the setting to lower.

use super::*;
use crate::nn::{Init, Preset};
use crate::train::{Net, Task};

fn counted(model: &ModelConfig) -> u64 {
    let net = Net::new(model, &mut Init::new(0, &Device::Cpu)).unwrap();
    net.parameters().iter().map(|(_, t)| t.numel() as u64).sum()
}

#[test]
fn the_parameter_count_is_the_built_model_s() {
    let mut configs = vec![
        Config::defaults(Task::Spiral, None, None, 0).unwrap(),
        Config::defaults(Task::Digits, None, None, 0).unwrap(),
        Config::defaults(Task::Digits, Some(crate::train::Family::Cnn), None, 0).unwrap(),
    ];
    for preset in [Preset::Tiny, Preset::Small] {
        configs.push(Config::defaults(Task::Text, None, Some(preset), 65).unwrap());
    }
    let mut lora = Config::defaults(Task::Text, None, Some(Preset::Small), 65).unwrap();
    let ModelConfig::Gpt(g) = &mut lora.model else {
        unreachable!("the text task's model is a GPT")
    };
    g.lora = Some(crate::nn::LoraConfig {
        rank: 4,
        alpha: 4.0,
    });
    let trainable = Net::new(&lora.model, &mut Init::new(0, &Device::Cpu))
        .unwrap()
        .parameters()
        .iter()
        .filter(|(_, t)| t.requires_grad())
        .map(|(_, t)| t.numel() as u64)
        .sum::<u64>();
    assert_eq!(Footprint::of(&lora).parameters, trainable);
    // Held in f16, the frozen projections are the footprint's f16 ones, in fewer bytes.
    let mut init = Init::new(0, &Device::Cpu);
    init.hold_frozen_in_f16(true);
    let halves: u64 = Net::new(&lora.model, &mut init)
        .unwrap()
        .parameters()
        .iter()
        .filter(|(_, t)| t.dtype() == crate::DType::F16)
        .map(|(_, t)| t.numel() as u64)
        .sum();
    let held = Config {
        frozen_f16: true,
        ..lora.clone()
    };
    assert!(halves > 0);
    assert_eq!(Footprint::of(&held).frozen_f16, halves);
    assert!(Footprint::of(&held).bytes() < Footprint::of(&lora).bytes());
    configs.push(lora);
    for config in configs {
        let f = Footprint::of(&config);
        assert_eq!(
            f.parameters + f.frozen,
            counted(&config.model),
            "{:?}",
            config.model
        );
        f.check(&Device::Cpu).unwrap();
    }
}

fn gpt_config(layers: usize, width: usize, batch: usize, context: usize) -> Config {
    let mut config = Config::defaults(Task::Text, None, Some(Preset::Tiny), 65).unwrap();
    let ModelConfig::Gpt(g) = &mut config.model else {
        unreachable!("the text task's model is a GPT")
    };
    (g.layers, g.width, g.heads, g.context) = (layers, width, 4, context);
    config.batch = batch;
    config
}

#[test]
fn a_cnn_whose_convolution_buffers_would_not_fit_is_refused_naming_the_channels() {
    let mut config =
        Config::defaults(Task::Digits, Some(crate::train::Family::Cnn), None, 0).unwrap();
    let ModelConfig::Cnn(c) = &mut config.model else {
        unreachable!("a CNN was asked for")
    };
    // The feature maps (64 × 512 × 28 × 28 floats at most) fit in 1 GB; the second
    // layer's weight gradients, one per example (64 × 2048 × 512 × 9), do not.
    c.channels = vec![512, 2048];
    config.batch = 64;
    let f = Footprint::of(&config);
    let unfold = f
        .parts
        .iter()
        .find(|p| p.what.contains("unfolded"))
        .unwrap();
    assert_eq!(unfold.floats, 64 * 512 * 9 * 14 * 14);
    let why = refusal(&config);
    assert!(why.contains("weight gradients, one per example"), "{why}");
    assert!(why.contains("lower the batch or channels"), "{why}");
}

#[test]
fn long_contexts_count_the_attention_probabilities_they_keep() {
    let at = |batch, context| Footprint::of(&gpt_config(2, 64, batch, context)).activations;
    // Per token the rest grows linearly: what doubling 128 adds is only the probabilities.
    let scores = (2 + 2) * 8 * 4 * 256 * 256;
    assert_eq!(at(8, 256), 2 * at(8, 128) + scores);
    // Past 256 MB of probabilities a call takes the tiled kernels, which keep none.
    assert_eq!(at(1024, 256), 2 * at(1024, 128));
}

#[test]
fn recomputed_blocks_count_their_inputs_and_one_block_s_activations() {
    let at = |recompute| {
        let mut config = gpt_config(12, 64, 8, 256);
        config.recompute = recompute;
        Footprint::of(&config).activations
    };
    // 8 × 256 tokens of width 64: eleven blocks' activations and probabilities fewer, twelve
    // inputs of the blocks more.
    let (tokens, per_block) = (8 * 256, GPT_FLOATS_PER_TOKEN_PER_WIDTH);
    let scores = 8 * 4 * 256 * 256;
    let saved = tokens * 64 * (11 * per_block - 12) + 11 * scores;
    assert_eq!(at(false) - at(true), saved);
}

/// The activations of a 2-layer GPT of width 64 (batch 8 × 128) over `vocab` tokens, with
/// `lora` or without.
fn activations_with_vocab(vocab: usize, lora: Option<crate::nn::LoraConfig>) -> u64 {
    let mut config = gpt_config(2, 64, 8, 128);
    let ModelConfig::Gpt(g) = &mut config.model else {
        unreachable!("the text task's model is a GPT")
    };
    (g.vocab, g.lora) = (vocab, lora);
    Footprint::of(&config).activations
}

#[test]
fn a_padded_vocabulary_counts_the_output_layer_s_padded_copy() {
    let with_vocab = |vocab| activations_with_vocab(vocab, None);
    // 2,049 tokens are padded to 2,052: the copy and its gradient, 2 × 2,052 × 64 floats,
    // on top of what one more token per row adds (3 floats for each of 8 × 128 tokens).
    let per_token = 3 * 8 * 128;
    assert_eq!(
        with_vocab(2049),
        with_vocab(2048) + per_token + 2 * 2052 * 64
    );
    // 65 characters are not padded.
    assert_eq!(with_vocab(65), with_vocab(64) + per_token);
}

#[test]
fn a_frozen_padded_vocabulary_counts_only_its_pad_rows() {
    let lora = crate::nn::LoraConfig {
        rank: 4,
        alpha: 4.0,
    };
    let with_vocab = |vocab| activations_with_vocab(vocab, Some(lora));
    // LoRA's frozen table of 2,049 rows is kept as 2,052: 3 × 64 floats more, no copy.
    let per_token = 3 * 8 * 128;
    assert_eq!(with_vocab(2049), with_vocab(2048) + per_token + 3 * 64);
}

#[test]
fn a_size_just_over_its_limit_is_told_apart_from_it() {
    let gb = 1u64 << 30;
    assert_eq!(
        more_than(gb + gb / 100, gb),
        ("1.08 GB".into(), "1.07 GB".into())
    );
    assert_eq!(more_than(3 * gb, gb), ("3.2 GB".into(), "1.1 GB".into()));
}

fn refusal(config: &Config) -> String {
    Footprint::of(config)
        .check(&Device::Cpu)
        .unwrap_err()
        .to_string()
}

#[test]
fn a_huge_model_is_refused_by_the_setting_that_makes_it_huge() {
    let layers = refusal(&gpt_config(1_000_000, 96, 32, 32));
    assert!(
        layers.contains("too large") && layers.ends_with("lower the width or layers"),
        "{layers}"
    );
    let batch = refusal(&gpt_config(1, 96, 1_000_000, 256));
    assert!(batch.contains("lower the batch, context"), "{batch}");
    let wide = refusal(&gpt_config(1, 1 << 20, 1, 32));
    assert!(
        wide.contains("an MLP weight") && wide.ends_with("lower the width"),
        "{wide}"
    );
    // Millions of distinct characters make an embedding no buffer holds: the text is named.
    let mut text = gpt_config(1, 96, 1, 32);
    let ModelConfig::Gpt(g) = &mut text.model else {
        unreachable!("the text task's model is a GPT")
    };
    g.vocab = 5_000_000;
    let text = refusal(&text);
    assert!(
        text.contains("the token embedding")
            && text.ends_with("fewer distinct characters than its 5000000"),
        "{text}"
    );
    // Sizes near the integer limit saturate instead of wrapping to a small figure.
    let absurd = refusal(&gpt_config(usize::MAX, usize::MAX, usize::MAX, usize::MAX));
    assert!(absurd.contains("too large"), "{absurd}");
}
