//! The dynamic loss scale (src/optim/loss_scale.rs), checked natively (tests/half.rs) and in
//! the browser (tests/browser.rs): an overflow skips the step and halves the scale, which grows
//! back after clean steps, on any GPU.

use webgrad::optim::{Optimizer, OptimizerConfig, Rule, RuleKind, Schedule};
use webgrad::{Device, Tensor};

/// SGD with momentum and AdamW, each clipped as the GPT presets train.
pub fn configs() -> [OptimizerConfig; 2] {
    let sgd = Rule::Sgd {
        momentum: 0.9,
        nesterov: false,
    };
    [clipped(sgd), clipped(RuleKind::AdamW.defaults())]
}

/// `rule` with clipping, as the GPT presets train with AdamW. SGD's step grows with its
/// gradient, so that one not unscaled shows; Adam's hardly does.
fn clipped(rule: Rule) -> OptimizerConfig {
    OptimizerConfig {
        rule,
        lr: 0.1,
        weight_decay: 0.01,
        decay: Default::default(),
        clip: Some(1.0),
        schedule: Schedule::Constant,
    }
}

/// One step of `optimizer` on loss = Σ w · x.
async fn step(optimizer: &mut Optimizer, params: &[(String, Tensor)], x: &[f32]) -> Vec<f32> {
    let w = &params[0].1;
    let x = Tensor::from_vec(x.to_vec(), &[x.len()], w.device()).unwrap();
    let loss = w.mul(&x).unwrap().sum_all().unwrap();
    let grads = optimizer.backward(&loss).unwrap();
    optimizer.step(params, &grads).unwrap();
    w.to_vec().await.unwrap()
}

/// A scaled optimizer of `config` against one without a scale: a clean step the same, an
/// overflowed one skipped with the scale halved, and the scale doubled back after clean steps.
pub async fn overflow_skips(config: OptimizerConfig) {
    let gpu = super::gpu().await;
    let start = vec![0.5, -0.25, 1.0, 2.0];
    let param = |d: &Device| {
        let w = Tensor::from_vec(start.clone(), &[4], d)
            .unwrap()
            .with_grad();
        vec![("w".to_string(), w)]
    };
    let (scaled, plain) = (param(&gpu), param(&gpu));
    let mut with_scale = Optimizer::new(config.clone(), &scaled).unwrap();
    with_scale.scale_losses(1024.0, 3).unwrap();
    let mut without = Optimizer::new(config.clone(), &plain).unwrap();
    let clean = [0.3, -1.5, 2.0, 0.01];
    // A clean step: the gradients unscaled, the same update as without a scale.
    let a = step(&mut with_scale, &scaled, &clean).await;
    let b = step(&mut without, &plain, &clean).await;
    let most = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(most < 1e-6 && a != start, "scaled {a:?}, plain {b:?}");
    let scale = with_scale.loss_scale().unwrap();
    assert_eq!(scale.read().await.unwrap(), (1024.0, 0));
    // 1e36 × 1024 overflows f32: the step is skipped, the scale halved, the weights kept.
    let kept = step(&mut with_scale, &scaled, &[1e36, 0.0, 0.0, 0.0]).await;
    assert_eq!(kept, a, "an overflowed step changed the weights");
    let scale = with_scale.loss_scale().unwrap();
    assert_eq!(scale.read().await.unwrap(), (512.0, 1));
    // Three clean steps later it doubles back, the skipped step still counted.
    for _ in 0..3 {
        let w = step(&mut with_scale, &scaled, &clean).await;
        assert!(w.iter().all(|v| v.is_finite()), "{w:?}");
    }
    let scale = with_scale.loss_scale().unwrap();
    assert_eq!(scale.read().await.unwrap(), (1024.0, 1));
    // Four updates each: the skipped step was not one of the optimizer's (Adam's bias
    // corrections count the updates made, as when GradScaler skips optimizer.step()).
    let mut b = Vec::new();
    for _ in 0..3 {
        b = step(&mut without, &plain, &clean).await;
    }
    let a = scaled[0].1.to_vec().await.unwrap();
    let most = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    assert!(most < 2e-5, "after a skip {a:?}, without one {b:?}");
}
