//! When the batch submits after a wait (src/gpu/batch.rs, `early_submit`): the GPU has nothing
//! to do then, so the next dispatches go as soon as there are 16 of them after a stretch of
//! more than 96 natively, and in the browser as soon as there are 8 after any stretch of more
//! than 8 on a real GPU, 16 after more than 16 on one emulated on the CPU (tests in
//! tests/autograd.rs and tests/browser.rs).

use webgrad::{Device, Tensor};

/// For each `(stretch, submits)`: `stretch` dispatches, a wait, then a step of 40 that must
/// take `submits` submits, then a wait.
pub async fn submits_after_a_wait(device: &Device, cases: &[(usize, u64)]) {
    let Device::Gpu(gpu) = device else {
        unreachable!("a GPU device")
    };
    let x = Tensor::from_vec(vec![0.5f32; 64], &[64], device).unwrap();
    let steps = |n: usize| {
        let mut y = x.clone();
        for _ in 0..n {
            y = y.scale(1.01).unwrap();
        }
        y
    };
    for &(stretch, submits) in cases {
        let _y = steps(stretch);
        gpu.finished().await.unwrap();
        let mark = gpu.counters();
        let _y = steps(40);
        gpu.flush();
        let c = gpu.counters().since(&mark);
        assert!((17..96).contains(&c.dispatches), "{c:?}");
        assert_eq!(c.submits, submits, "after {stretch} dispatches, {c:?}");
        gpu.finished().await.unwrap();
    }
}
