//! What the page shows of a model's insides: hidden activations, feature maps, attention
//! weights, gradient flow and sampled characters with their probabilities. Each is checked
//! against a computation of its own (on the host, or by a relation it must satisfy), and the
//! GPU's against the CPU backend's.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, run};
use webgrad::data::Text;
use webgrad::optim::Rule;
use webgrad::train::{Config, Inside, SampleSettings, Session, Task, TaskData};
use webgrad::Device;

fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn spiral(device: &Device) -> Session {
    let mut config = Config::defaults(Task::Spiral, None, None, 0).unwrap();
    config.seed = 3;
    common::spiral_session(device, &config)
}

/// x · wᵀ + b for one row x.
fn affine(x: &[f32], w: &[f32], b: &[f32]) -> Vec<f32> {
    b.iter()
        .enumerate()
        .map(|(o, bias)| {
            bias + x
                .iter()
                .zip(&w[o * x.len()..])
                .map(|(a, c)| a * c)
                .sum::<f32>()
        })
        .collect()
}

#[test]
fn an_mlps_hidden_layers_lead_to_its_output() {
    run(async {
        let session = spiral(&Device::Cpu);
        let x = vec![0.3, -0.7, 1.0, 0.2];
        let insides = session.insides(x.clone(), 2).await.unwrap();
        let names: Vec<&str> = insides.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["hidden 1", "hidden 2", "hidden 3", "output"]);
        // The first layer by hand: relu(x · W0ᵀ + b0).
        let p = session
            .read_parameters(&[
                "layers.0.weight",
                "layers.0.bias",
                "layers.3.weight",
                "layers.3.bias",
            ])
            .await
            .unwrap();
        let first: Vec<f32> = affine(&x[..2], &p[0].values, &p[1].values)
            .into_iter()
            .map(|v| v.max(0.0))
            .collect();
        assert_eq!(insides[0].shape, [2, 32]);
        assert_close(
            "hidden 1",
            &widen(&insides[0].values[..32]),
            &widen(&first),
            1e-5,
        );
        // The output from the last hidden layer by hand: softmax(h3 · W3ᵀ + b3).
        let logits = affine(&insides[2].values[..32], &p[2].values, &p[3].values);
        let total: f32 = logits.iter().map(|l| l.exp()).sum();
        let probs: Vec<f32> = logits.iter().map(|l| l.exp() / total).collect();
        assert_close(
            "output",
            &widen(&insides[3].values[..2]),
            &widen(&probs),
            1e-5,
        );
    });
}

#[test]
fn asking_for_a_missing_parameter_names_it() {
    run(async {
        let err = spiral(&Device::Cpu)
            .read_parameters(&["layers.9.weight"])
            .await;
        assert!(format!("{}", err.unwrap_err()).contains("layers.9.weight"));
    });
}

fn same(what: &str, gpu: &[Inside], cpu: &[Inside], tol: f64) {
    assert_eq!(gpu.len(), cpu.len(), "{what}");
    for (g, c) in gpu.iter().zip(cpu) {
        assert_eq!((&g.name, &g.shape), (&c.name, &c.shape), "{what}");
        assert_close(
            &format!("{what} {}", g.name),
            &widen(&g.values),
            &widen(&c.values),
            tol,
        );
    }
}

#[test]
fn insides_on_the_gpu_match_the_cpu_backend() {
    run(async {
        let gpu = common::gpu().await;
        let x: Vec<f32> = (0..20).map(|i| (i as f32 * 0.37).sin()).collect();
        let (g, c) = (spiral(&gpu), spiral(&Device::Cpu));
        same(
            "mlp",
            &g.insides(x.clone(), 10).await.unwrap(),
            &c.insides(x, 10).await.unwrap(),
            1e-4,
        );

        let digits = |device: &Device| {
            let mut config = Config::defaults(Task::Digits, None, None, 0).unwrap();
            config.batch = 4;
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/web/data/digits.bin.gz");
            let data = webgrad::data::digits_from_gzip(&std::fs::read(path).unwrap()).unwrap();
            Session::new(config, TaskData::Labelled(data), device).unwrap()
        };
        let image: Vec<f32> = (0..2 * 784).map(|i| ((i * 7) % 13) as f32 / 13.0).collect();
        let (g, c) = (digits(&gpu), digits(&Device::Cpu));
        let gi = g.insides(image.clone(), 2).await.unwrap();
        same("cnn", &gi, &c.insides(image, 2).await.unwrap(), 1e-4);
        assert_eq!(gi[0].name, "conv1");
        assert_eq!(gi[0].shape[2..], [28, 28]);
        assert!(
            gi[0].values.iter().all(|&v| v >= 0.0),
            "feature maps after a ReLU"
        );

        let (g, c) = (text_session(&gpu), text_session(&Device::Cpu));
        same(
            "gpt",
            &g.attention("to be or").await.unwrap(),
            &c.attention("to be or").await.unwrap(),
            1e-4,
        );
    });
}

fn text_session(device: &Device) -> Session {
    let text = Text::new(&"to be or not to be, that is the question. ".repeat(40)).unwrap();
    let mut config = Config::defaults(Task::Text, None, None, text.tokenizer.len()).unwrap();
    config.batch = 2;
    Session::new(config, TaskData::Text(text), device).unwrap()
}

/// LayerNorm of one row with weight 1 and bias 0 (the init), as the first block sees it.
fn layernorm(x: &[f32]) -> Vec<f32> {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / n;
    x.iter().map(|v| (v - mean) / (var + 1e-5).sqrt()).collect()
}

#[test]
fn attention_weights_are_causal_and_computed_from_queries_and_keys() {
    run(async {
        let session = text_session(&Device::Cpu);
        let prompt = "to be";
        let layers = session.attention(prompt).await.unwrap();
        let (heads, t) = (layers[0].shape[0], prompt.len());
        assert_eq!(layers[0].shape, [heads, t, t]);
        // The map's sides: a character per token.
        let labels = session.attention_labels(prompt).unwrap();
        assert_eq!(labels, ["t", "o", " ", "b", "e"]);
        for l in &layers {
            for row in l.values.chunks(t).enumerate() {
                let (i, w) = (row.0 % t, row.1);
                assert!(
                    (w.iter().sum::<f32>() - 1.0).abs() < 1e-5,
                    "{}: row sums to 1",
                    l.name
                );
                assert!(
                    w[i + 1..].iter().all(|&v| v == 0.0),
                    "{}: no weight on later keys",
                    l.name
                );
            }
        }
        // Layer 1 by hand: x = tok_emb + pos_emb, LayerNorm, q and k, softmax(q·kᵀ/√d).
        let names = [
            "tok_emb.weight",
            "pos_emb.weight",
            "blocks.0.attn.qkv.weight",
            "blocks.0.attn.qkv.bias",
        ];
        let p = session.read_parameters(&names).await.unwrap();
        let c = p[1].shape[1];
        let tokens = session
            .text()
            .unwrap()
            .tokenizer
            .tokens()
            .unwrap()
            .encode(prompt)
            .unwrap();
        let rows: Vec<Vec<f32>> = tokens
            .iter()
            .enumerate()
            .map(|(pos, &tok)| {
                let x: Vec<f32> = (0..c)
                    .map(|j| p[0].values[tok as usize * c + j] + p[1].values[pos * c + j])
                    .collect();
                affine(&layernorm(&x), &p[2].values, &p[3].values)
            })
            .collect();
        let d = c / heads;
        let mut want = Vec::new();
        for h in 0..heads {
            for i in 0..t {
                let scores: Vec<f32> = (0..t)
                    .map(|j| {
                        let dot: f32 = (0..d)
                            .map(|e| rows[i][h * d + e] * rows[j][c + h * d + e])
                            .sum();
                        if j > i {
                            f32::NEG_INFINITY
                        } else {
                            dot / (d as f32).sqrt()
                        }
                    })
                    .collect();
                let m = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let total: f32 = scores.iter().map(|s| (s - m).exp()).sum();
                want.extend(scores.iter().map(|s| (s - m).exp() / total));
            }
        }
        assert_close("layer 1", &widen(&layers[0].values), &widen(&want), 1e-4);
    });
}

#[test]
fn gradient_flow_agrees_with_the_update_sgd_makes() {
    run(async {
        let mut config = Config::defaults(Task::Spiral, None, None, 0).unwrap();
        config.optimizer.rule = Rule::Sgd {
            momentum: 0.0,
            nesterov: false,
        };
        config.optimizer.lr = 0.5;
        config.optimizer.weight_decay = 0.0;
        config.optimizer.clip = None;
        for device in [Device::Cpu, common::gpu().await] {
            let on = if matches!(device, Device::Cpu) {
                "cpu"
            } else {
                "gpu"
            };
            let mut session = common::spiral_session(&device, &config);
            session.train_step().unwrap();
            assert_eq!(session.flow().await.unwrap(), None, "no step watched yet");
            let names: Vec<String> = (0..4)
                .flat_map(|l| ["weight", "bias"].map(|k| format!("layers.{l}.{k}")))
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let before = session.read_parameters(&names).await.unwrap();
            session.watch_next_step();
            session.train_step().unwrap();
            let after = session.read_parameters(&names).await.unwrap();
            let flow = session.flow().await.unwrap().expect("a watched step");
            assert_eq!(flow.step, 2);
            let layers: Vec<&str> = flow.layers.iter().map(|l| l.layer.as_str()).collect();
            assert_eq!(layers, ["layers.0", "layers.1", "layers.2", "layers.3"]);
            // Plain SGD moves the weights by lr · gradient, so the gradient's norm is the
            // step's ‖Δw‖ / lr, read from the weights themselves.
            let norm = |parts: &[&Inside]| {
                parts
                    .iter()
                    .flat_map(|p| &p.values)
                    .map(|v| v * v)
                    .sum::<f32>()
                    .sqrt()
            };
            for (i, l) in flow.layers.iter().enumerate() {
                let (w0, w1) = (&before[2 * i..2 * i + 2], &after[2 * i..2 * i + 2]);
                let delta: Vec<Inside> = w0
                    .iter()
                    .zip(w1)
                    .map(|(a, b)| Inside {
                        values: b.values.iter().zip(&a.values).map(|(y, x)| y - x).collect(),
                        ..a.clone()
                    })
                    .collect();
                let moved = norm(&delta.iter().collect::<Vec<_>>());
                let want_grad = moved / config.optimizer.lr;
                let want_ratio = moved / norm(&w0.iter().collect::<Vec<_>>());
                let near = |a: f32, b: f32| (a - b).abs() <= 2e-3 * b.abs() + 1e-7;
                assert!(
                    near(l.grad_norm, want_grad),
                    "{on} {l:?}: gradient norm {want_grad}"
                );
                assert!(
                    near(l.update_ratio, want_ratio),
                    "{on} {l:?}: update ratio {want_ratio}"
                );
                assert!(l.grad_norm > 0.0, "{l:?}");
            }
        }
    });
}

#[test]
fn sampling_a_character_at_a_time_gives_the_whole_sample() {
    run(async {
        let session = text_session(&Device::Cpu);
        let settings = SampleSettings {
            prompt: "to ".into(),
            tokens: 12,
            temperature: 0.8,
            top_k: 5,
            seed: 9,
        };
        let whole = session.sample(&settings, |_| {}).await.unwrap();
        let mut sampler = session.sampler(settings).unwrap();
        let mut pieces = String::new();
        while let Some(s) = session.sample_next(&mut sampler).await.unwrap() {
            assert!(s.probability > 0.0 && s.probability <= 1.0, "{s:?}");
            pieces.push_str(&s.text);
        }
        assert_eq!(pieces, whole);
        assert_eq!(pieces.chars().count(), 12);
    });
}

#[test]
fn weight_histograms_count_every_weight_in_its_bin() {
    run(async {
        // The wide model's middle matrix (1024 × 1024) is counted in two chunks.
        let mut wide = Config::defaults(Task::Spiral, None, None, 0).unwrap();
        if let webgrad::train::ModelConfig::Mlp(m) = &mut wide.model {
            (m.width, m.depth) = (1024, 2);
        }
        let default = Config::defaults(Task::Spiral, None, None, 0).unwrap();
        for device in [Device::Cpu, common::gpu().await] {
            for config in [&default, &wide] {
                let session = common::spiral_session(&device, config);
                let hists = session.weight_histograms().await.unwrap();
                let names: Vec<&str> = hists.iter().map(|h| h.name.as_str()).collect();
                assert!(
                    names
                        .iter()
                        .all(|n| n.starts_with("layers.") && n.ends_with(".weight")),
                    "{names:?}"
                );
                let weights = session.read_parameters(&names).await.unwrap();
                for (h, w) in hists.iter().zip(&weights) {
                    let n = w.values.len() as f32;
                    let sigma = (w.values.iter().map(|v| v * v).sum::<f32>() / n).sqrt();
                    assert!(
                        (h.range - 4.0 * sigma).abs() <= 1e-3 * h.range,
                        "{}: range {} for σ {sigma}",
                        h.name,
                        h.range
                    );
                    // By hand: bin k holds values in [edge k, edge k+1), the outer bins the tails.
                    let mut want = vec![0u64; webgrad::train::BINS];
                    for v in &w.values {
                        let t = (v / h.range + 1.0) / 2.0 * webgrad::train::BINS as f32;
                        want[(t.floor().max(0.0) as usize).min(webgrad::train::BINS - 1)] += 1;
                    }
                    // Values within rounding of an edge may fall either side of it.
                    let moved: u64 = h
                        .counts
                        .iter()
                        .zip(&want)
                        .map(|(a, b)| a.abs_diff(*b))
                        .sum();
                    assert_eq!(
                        h.counts.iter().sum::<u64>(),
                        w.values.len() as u64,
                        "{}",
                        h.name
                    );
                    assert!(
                        moved <= 2 + w.values.len() as u64 / 100_000,
                        "{}: {:?} against {want:?}",
                        h.name,
                        h.counts
                    );
                }
            }
        }
    });
}
