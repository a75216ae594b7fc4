//! Autotuning on a real device (src/tune/): the large tiles a GPU runs at once are measured the
//! first time with the attention block that ran fastest, set in the device's tuning and
//! remembered, and a second tuning from what was remembered dispatches nothing. On lavapipe the real-GPU kernels are forced, and the search
//! looks no further than 4 tiles to keep it short; the figure itself is the CPU's and means
//! little, so only its range is checked (search.rs's tests check the search on known timings).
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::run;
use webgrad::tune::{self, Cache, How, Probe};
use webgrad::Device;

#[test]
fn a_gpu_is_measured_once_and_then_remembered() {
    run(async {
        let Device::Gpu(gpu) = common::gpu().await else {
            unreachable!("common::gpu gives a GPU")
        };
        gpu.use_emulated_kernels(Some(false));
        // Up to 4 tiles, and attention over 64 positions of one head of 32, and of 64.
        let probe = Probe {
            most_tiles: 4,
            attention: [[1, 64, 32, 1], [1, 64, 64, 1]],
        };
        let mut cache = Cache::default();
        let first = tune::tune_with(&gpu, &mut cache, probe).await;
        let How::Measured(took) = first.how else {
            panic!("not measured: {first:?}")
        };
        assert!(took.as_secs_f64() > 0.0);
        if let Some(n) = first.measured.tiles_at_once {
            assert!((1..=4).contains(&n), "{n} tiles at once");
        }
        // lavapipe's 32 KiB hold blocks of 16, 32 and 64 for heads of 32, and 16 and 32 for
        // heads of 64: one of those each.
        let [narrow, wide] = first.measured.attention_blocks;
        assert!(matches!(narrow, Some(16 | 32 | 64)), "{narrow:?}");
        assert!(matches!(wide, Some(16 | 32)), "{wide:?}");
        assert_eq!(gpu.tuning().tiles_at_once, first.measured.tiles_at_once);
        assert_eq!(gpu.tuning().attention_block(64), wide);
        assert!(gpu.take_errors().is_empty());
        let sentence = first.sentence().unwrap();
        assert!(sentence.contains("measured in"), "{sentence}");

        let dispatched = gpu.counters().dispatches;
        let again = tune::tune_with(&gpu, &mut Cache::parse(&cache.to_text()), probe).await;
        assert_eq!(again.how, How::Remembered);
        assert_eq!(again.measured, first.measured);
        assert_eq!(
            gpu.counters().dispatches,
            dispatched,
            "remembered, yet measured"
        );

        // The emulated kernels take no large tiles: nothing to measure.
        gpu.use_emulated_kernels(Some(true));
        let emulated = tune::tune_with(&gpu, &mut Cache::default(), probe).await;
        assert_eq!(emulated.how, How::NotUsed);
        gpu.use_emulated_kernels(None);
    });
}
