//! Checkpoints: exact resume, untrusted files refused with nothing changed, files from older
//! builds and from PyTorch, and LoRA's base checkpoint under new adapters.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{param_values, run, spiral_session};
use webgrad::data::{points, PointSet};
use webgrad::optim::RuleKind;
use webgrad::train::{Config, Session, Task, TaskData};
use webgrad::Tensor;

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
                param_values(a.parameters()).await,
                param_values(b.parameters()).await,
                "{optimizer}"
            );
        }
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
        let before = param_values(s.parameters()).await;

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
                param_values(s.parameters()).await,
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
        let base_config = Config::defaults(Task::Text, None, None, text.tokenizer.len()).unwrap();
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
        let other = Text::read_with(
            &"not to be, be not, to be. ".repeat(20),
            text.tokenizer.clone(),
        );
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
