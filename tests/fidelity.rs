//! Fidelity against PyTorch: for small fixed MLP, CNN and GPT models (tests/golden/*.json,
//! written by tools/golden.py with PyTorch in float64), our loss and every parameter gradient
//! on the GPU match within 1e-4 relative, and one AdamW step from the same gradients gives
//! PyTorch's weights, with one parameter group and with nanoGPT's two (decay on matrices only).
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, run};
use serde_json::Value;
use webgrad::nn::Init;
use webgrad::optim::{DecayScope, Optimizer, OptimizerConfig, Rule, Schedule};
use webgrad::train::{ModelConfig, Net};
use webgrad::{Gradients, Tensor};

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn ints(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

async fn check(name: &str) {
    let device = common::gpu().await;
    let path = format!("{}/tests/golden/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let golden: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let config: ModelConfig = serde_json::from_value(golden["config"].clone()).unwrap();
    let net = Net::new(&config, &mut Init::new(0, &device)).unwrap();
    let params = net.parameters();
    assert_eq!(
        params.len(),
        golden["weights"].as_object().unwrap().len(),
        "{name}: parameter count"
    );
    for (pname, p) in &params {
        let w = &golden["weights"][pname];
        assert!(w.is_object(), "{name}: PyTorch has no parameter {pname}");
        let shape: Vec<usize> = ints(&w["shape"]).iter().map(|&v| v as usize).collect();
        assert_eq!(p.shape(), &shape[..], "{name}: shape of {pname}");
        p.assign(
            &floats(&w["data"])
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<_>>(),
        )
        .unwrap();
    }
    let x_shape: Vec<usize> = ints(&golden["x_shape"])
        .iter()
        .map(|&v| v as usize)
        .collect();
    let x = match config {
        ModelConfig::Gpt(_) => Tensor::from_u32(ints(&golden["x"]), &x_shape, &device).unwrap(),
        _ => Tensor::from_f64(floats(&golden["x"]), &x_shape, &device).unwrap(),
    };
    let y = ints(&golden["y"]);
    let y = Tensor::from_u32(y.clone(), &[y.len()], &device).unwrap();
    // The training loss, as a session computes it.
    let loss = net.loss(&x, &y, None).unwrap();
    let got = loss.to_vec_f64().await.unwrap();
    assert_close(
        &format!("{name} loss"),
        &got,
        &[golden["loss"].as_f64().unwrap()],
        1e-4,
    );
    let grads = loss.backward().unwrap();
    for (pname, p) in &params {
        let g = grads.get(p).unwrap().to_vec_f64().await.unwrap();
        assert_close(
            &format!("{name} grad {pname}"),
            &g,
            &floats(&golden["grads"][pname]),
            1e-4,
        );
    }

    // One AdamW step from PyTorch's own gradients, with one parameter group and with two.
    let weights = snapshot(&params).await;
    adamw_step(&golden, &params, DecayScope::All, "adamw").await;
    for ((_, p), w) in params.iter().zip(&weights) {
        p.assign(w).unwrap();
    }
    adamw_step(&golden, &params, DecayScope::Matrices, "adamw_groups").await;
}

async fn snapshot(params: &[(String, Tensor)]) -> Vec<Vec<f32>> {
    let mut out = Vec::new();
    for (_, p) in params {
        out.push(p.to_vec().await.unwrap());
    }
    out
}

/// One AdamW step of `params` from the golden gradients, checked against the golden weights
/// after PyTorch's step under `key`.
async fn adamw_step(golden: &Value, params: &[(String, Tensor)], decay: DecayScope, key: &str) {
    let adamw = &golden["adamw"];
    let config = OptimizerConfig {
        rule: Rule::AdamW {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        },
        lr: adamw["lr"].as_f64().unwrap() as f32,
        weight_decay: adamw["weight_decay"].as_f64().unwrap() as f32,
        decay,
        clip: None,
        schedule: Schedule::Constant,
    };
    let mut optimizer = Optimizer::new(config, params).unwrap();
    let mut torch_grads = Gradients::default();
    for (pname, p) in params {
        let g = Tensor::from_f64(floats(&golden["grads"][pname]), p.shape(), p.device()).unwrap();
        torch_grads.insert(p, g);
    }
    optimizer.step(params, &torch_grads).unwrap();
    for (pname, p) in params {
        let after = p.to_vec_f64().await.unwrap();
        assert_close(
            &format!("{key} step {pname}"),
            &after,
            &floats(&golden[key]["after"][pname]),
            1e-5,
        );
    }
}

#[test]
fn mlp_matches_pytorch() {
    run(check("mlp"));
}

#[test]
fn cnn_matches_pytorch() {
    run(check("cnn"));
}

#[test]
fn gpt_matches_pytorch() {
    run(check("gpt"));
}
