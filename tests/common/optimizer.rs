//! One optimizer step over many parameters of ragged sizes on the GPU against the CPU backend:
//! on the GPU the gradients are gathered into flat buffers, seven a dispatch
//! (src/optim/gather.rs), and one kernel updates them all; on the CPU each parameter is
//! updated alone. Natively in tests/training.rs, in the browser in tests/browser.rs.

use webgrad::optim::{Optimizer, OptimizerConfig, Rule, Schedule};
use webgrad::{Device, Error, Gradients, Tensor};

/// Nine parameters: two gathers, the second of two; lengths that are not multiples of four.
const SHAPES: [&[usize]; 9] = [
    &[3],
    &[5, 7],
    &[1],
    &[64],
    &[130],
    &[2, 2],
    &[9],
    &[33, 3],
    &[4],
];

fn adamw() -> OptimizerConfig {
    OptimizerConfig {
        rule: Rule::AdamW {
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        },
        lr: 0.1,
        weight_decay: 0.01,
        decay: Default::default(),
        clip: Some(0.5),
        schedule: Schedule::Constant,
    }
}

/// The parameters after two AdamW steps (clipped) from fixed gradients, on `device`.
async fn stepped(device: &Device) -> Vec<Vec<f64>> {
    let tensor = |shape: &[usize], seed| {
        let values = super::uniform(shape.iter().product(), -1.0, 1.0, seed);
        Tensor::from_f64(values, shape, device).unwrap()
    };
    let params: Vec<(String, Tensor)> = (0..SHAPES.len())
        .map(|i| (format!("p{i}"), tensor(SHAPES[i], i as u64 + 1)))
        .collect();
    let mut optimizer = Optimizer::new(adamw(), &params).unwrap();
    for step in 0..2u64 {
        let mut grads = Gradients::default();
        for (i, (_, p)) in params.iter().enumerate() {
            grads.insert(p, tensor(p.shape(), 100 * (step + 1) + i as u64));
        }
        optimizer.step(&params, &grads).unwrap();
    }
    let mut out = Vec::new();
    for (_, p) in &params {
        out.push(p.to_vec_f64().await.unwrap());
    }
    out
}

/// Checks the GPU's step against the CPU's, and that a gradient of the wrong shape is refused
/// before anything is updated.
pub async fn a_step_over_ragged_parameters_matches_the_cpu(gpu: &Device) {
    let (on_gpu, on_cpu) = (stepped(gpu).await, stepped(&Device::Cpu).await);
    for (i, (g, c)) in on_gpu.iter().zip(&on_cpu).enumerate() {
        super::assert_close(&format!("parameter {i}"), g, c, 1e-5);
    }

    let p = Tensor::from_f64(vec![1.0; 6], &[2, 3], gpu).unwrap();
    let params = vec![("w".to_string(), p.clone())];
    let mut optimizer = Optimizer::new(adamw(), &params).unwrap();
    let mut grads = Gradients::default();
    grads.insert(&p, Tensor::from_f64(vec![1.0; 6], &[3, 2], gpu).unwrap());
    let refused = optimizer.step(&params, &grads);
    assert!(matches!(refused, Err(Error::Shape { .. })), "{refused:?}");
    assert_eq!(p.to_vec_f64().await.unwrap(), vec![1.0; 6]);
}
