//! Checks of the launch path shared by the native and the browser tests.

use webgrad::{Device, Tensor};

/// A chain of scalings, each by its own factor, recorded into one submit. The pool hands two
/// buffers back and forth, so every other scaling binds the same pair: one kernel over the
/// same buffers many times in a submit, each launch with other parameters. Run twice, so that
/// the second run takes every bind group from the cache. Each launch must read its own factor.
pub async fn launches_over_the_same_buffers_read_their_own_parameters(device: &Device) {
    let Device::Gpu(gpu) = device else {
        panic!("expected a GPU device")
    };
    // Fewer dispatches than the first submit after a wait takes (8 in the browser on a real
    // GPU, else 16): one submit for the chain of 7.
    let factors: Vec<f32> = (1..=6).map(|i| 1.0 + i as f32 / 64.0).collect();
    let want: f64 = factors.iter().map(|&f| f as f64).product();
    let x = Tensor::from_vec(vec![1.0f32; 300], &[300], device).unwrap();
    gpu.finished().await.unwrap();
    for run in 0..2 {
        let mark = gpu.counters();
        let mut y = x.scale(1.0).unwrap();
        for &f in &factors {
            y = y.scale(f).unwrap();
        }
        let got = y.to_vec().await.unwrap();
        let c = gpu.counters().since(&mark);
        assert_eq!(c.submits, 1, "run {run}: {c:?}");
        if run == 1 {
            assert_eq!(c.bind_groups_created, 0, "run {run}: {c:?}");
        }
        for g in got {
            assert!(
                (g as f64 - want).abs() < 1e-5 * want,
                "run {run}: {g}, want {want}"
            );
        }
    }
}
