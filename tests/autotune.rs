//! Autotuning on a real device (src/tune/): the large tiles a GPU runs at once are measured the
//! first time, set in the device's tuning and remembered, and a second tuning from what was
//! remembered dispatches nothing. On lavapipe the real-GPU kernels are forced, and the search
//! looks no further than 4 tiles to keep it short; the figure itself is the CPU's and means
//! little, so only its range is checked (search.rs's tests check the search on known timings).
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::run;
use webgrad::tune::{self, Cache, How};
use webgrad::Device;

#[test]
fn a_gpu_is_measured_once_and_then_remembered() {
    run(async {
        let Device::Gpu(gpu) = common::gpu().await else {
            unreachable!("common::gpu gives a GPU")
        };
        gpu.use_emulated_kernels(Some(false));
        let mut cache = Cache::default();
        let first = tune::tune_up_to(&gpu, &mut cache, 4).await;
        let How::Measured(took) = first.how else {
            panic!("not measured: {first:?}")
        };
        assert!(took.as_secs_f64() > 0.0);
        if let Some(n) = first.tiles_at_once {
            assert!((1..=4).contains(&n), "{n} tiles at once");
        }
        assert_eq!(gpu.tuning().tiles_at_once, first.tiles_at_once);
        assert!(gpu.take_errors().is_empty());
        let sentence = first.sentence().unwrap();
        assert!(sentence.contains("measured in"), "{sentence}");

        let dispatched = gpu.counters().dispatches;
        let again = tune::tune_up_to(&gpu, &mut Cache::parse(&cache.to_text()), 4).await;
        assert_eq!(again.how, How::Remembered);
        assert_eq!(again.tiles_at_once, first.tiles_at_once);
        assert_eq!(
            gpu.counters().dispatches,
            dispatched,
            "remembered, yet measured"
        );

        // The emulated kernels take no large tiles: nothing to measure.
        gpu.use_emulated_kernels(Some(true));
        let emulated = tune::tune_up_to(&gpu, &mut Cache::default(), 4).await;
        assert_eq!(emulated.how, How::NotUsed);
        gpu.use_emulated_kernels(None);
    });
}
