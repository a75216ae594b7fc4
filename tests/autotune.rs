//! Autotuning on a real device (src/tune/): the large tiles a GPU runs at once are measured the
//! first time, set in the device's tuning and remembered, and a second tuning from what was
//! remembered dispatches nothing; so are a model's product shapes, timed as each variant. On lavapipe the real-GPU kernels are forced, and the search
//! looks no further than 4 tiles to keep it short; the figure itself is the CPU's and means
//! little, so only its range is checked (search.rs's tests check the search on known timings).
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::run;
use webgrad::gpu::{ProductShape, Tiles, Tuning};
use webgrad::ops::{product_candidates, ProductPath};
use webgrad::tune::{self, Cache, How};
use webgrad::{Device, Tensor};

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

/// A product of 256 rows over 784 inputs into 64 (an mlp's first layer): few tiles over a long
/// K, whose variants differ the most.
const SHAPE: ProductShape = ProductShape {
    m: 256,
    n: 64,
    k: 784,
    batches: 1,
    a_transposed: false,
    b_transposed: false,
    splittable: true,
    vec4: true,
    f16: false,
};

/// SHAPE's product of seeded values on `device`, and on the CPU.
fn product_and_reference(device: &Device) -> (Vec<f64>, Vec<f64>) {
    let a = common::uniform(SHAPE.m * SHAPE.k, -1.0, 1.0, 1);
    let b = common::uniform(SHAPE.k * SHAPE.n, -1.0, 1.0, 2);
    let tensor = |v: &[f64], shape: &[usize], d: &Device| {
        Tensor::from_vec(v.iter().map(|&x| x as f32).collect(), shape, d).unwrap()
    };
    let product = |d: &Device| {
        let (ta, tb) = (
            tensor(&a, &[SHAPE.m, SHAPE.k], d),
            tensor(&b, &[SHAPE.k, SHAPE.n], d),
        );
        run(ta.matmul(&tb).unwrap().to_vec_f64()).unwrap()
    };
    (product(device), product(&Device::Cpu))
}

/// This thread's GPU with the real GPUs' kernels forced (lavapipe would take the emulated
/// ones, which have no variants), as a device and as itself.
async fn real_kernels() -> (Device, std::rc::Rc<webgrad::Gpu>) {
    let device = common::gpu().await;
    let Device::Gpu(gpu) = &device else {
        unreachable!("common::gpu gives a GPU")
    };
    gpu.use_emulated_kernels(Some(false));
    let gpu = gpu.clone();
    (device, gpu)
}

#[test]
fn every_variant_a_shape_may_be_given_computes_its_product_and_is_followed() {
    run(async {
        let (device, gpu) = real_kernels().await;
        let gpu = &gpu;
        let candidates = product_candidates(SHAPE, &gpu.tuning());
        assert!(candidates.len() >= 2, "{candidates:?}");
        for variant in candidates {
            gpu.product_variants().choose(SHAPE, variant);
            let family = match variant.tiles {
                Tiles::Small => ProductPath::SmallTiles.family(),
                Tiles::Large => ProductPath::LargeTiles.family(),
                Tiles::Matrix => ProductPath::MatrixUnits.family(),
            };
            let before = gpu.dispatches_of(family);
            let (got, want) = product_and_reference(&device);
            common::assert_close(&format!("{variant:?}"), &got, &want, 1e-5);
            assert!(
                gpu.dispatches_of(family) > before,
                "{variant:?} not followed"
            );
        }
        assert!(gpu.take_errors().is_empty());
        gpu.use_emulated_kernels(None);
    });
}

#[test]
fn a_models_product_shapes_are_timed_once_and_then_remembered() {
    run(async {
        let (device, gpu) = real_kernels().await;
        let gpu = &gpu;
        gpu.product_variants().take_noted();
        // Planned without a variant: noted, and timed by the next tuning.
        product_and_reference(&device);
        assert!(gpu.product_variants().any_noted());
        // A step's free buffers are destroyed before the timing, not held under it.
        drop(Tensor::zeros(&[1 << 22], &device).unwrap());
        let held = gpu.counters().bytes_allocated;
        gpu.take_peak_bytes();
        let mut cache = Cache::default();
        let tuned = tune::tune_products(gpu, &mut cache).await.unwrap();
        assert_eq!(tuned.timed, 1, "{tuned:?}");
        let peak = gpu.take_peak_bytes();
        assert_eq!(
            peak, held,
            "the most the pool held while timing, against before it"
        );
        let chosen = gpu
            .product_variants()
            .chosen(&SHAPE)
            .expect("a variant chosen");
        assert!(product_candidates(SHAPE, &gpu.tuning()).contains(&chosen));
        assert!(tuned.sentence().unwrap().contains("1 product shapes timed"));
        let text = cache.to_text();
        assert!(
            text.contains("\tproduct 256 64 784 1 split vec4\t"),
            "{text}"
        );

        // Chosen, it is not noted again; remembered, it is followed without a timing.
        product_and_reference(&device);
        assert!(!gpu.product_variants().any_noted());
        let dispatched = gpu.counters().dispatches;
        let again = tune::tune_products(gpu, &mut Cache::parse(&text))
            .await
            .unwrap();
        assert_eq!((again.timed, gpu.counters().dispatches), (0, dispatched));
        assert!(gpu.take_errors().is_empty());
        gpu.use_emulated_kernels(None);
    });
}

/// A shape whose large tiles make four rounds or more of the GPU is not timed with K in parts:
/// there a cut cannot balance the rounds, and would only hold its partial products (parts
/// times the output) while timed. The timing then holds the shape's operands and output alone.
#[test]
fn shapes_of_many_rounds_are_timed_without_their_partial_products() {
    run(async {
        let (device, gpu) = real_kernels().await;
        let gpu = &gpu;
        let measured = gpu.tuning();
        // 256 × 1,024 over 512: 16 large tiles, four rounds of a GPU running 4 at once; 512
        // is long enough for two parts.
        gpu.set_tuning(Tuning {
            tiles_at_once: Some(4),
            ..measured
        });
        gpu.product_variants().take_noted();
        let (m, k, n) = (256, 512, 1024);
        let a = Tensor::zeros(&[m, k], &device).unwrap();
        let b = Tensor::zeros(&[k, n], &device).unwrap();
        drop(a.matmul(&b).unwrap());
        drop((a, b));
        assert!(gpu.product_variants().any_noted());
        gpu.release_free_buffers();
        let held = gpu.counters().bytes_allocated;
        gpu.take_peak_bytes();
        let tuned = tune::tune_products(gpu, &mut Cache::default())
            .await
            .unwrap();
        let timing = gpu.take_peak_bytes() - held;
        gpu.set_tuning(measured);
        gpu.use_emulated_kernels(None);
        assert_eq!(tuned.timed, 1, "{tuned:?}");
        let operands = (4 * (m * k + k * n + m * n)) as u64;
        assert!(
            timing <= operands + (64 << 10),
            "timing held {timing} bytes beyond the pool's, the operands and output {operands}"
        );
    });
}

/// Shapes with nothing to time (a single candidate: no vec4s, K not to be split) get the
/// planner's variant and leave the pool as it was: emptied, the steps after would make their
/// buffers afresh.
#[test]
fn shapes_with_one_candidate_leave_the_pool_alone() {
    run(async {
        let (device, gpu) = real_kernels().await;
        let gpu = &gpu;
        gpu.product_variants().take_noted();
        let shape = ProductShape {
            m: 1024,
            n: 257,
            k: 32,
            batches: 1,
            a_transposed: false,
            b_transposed: false,
            splittable: false,
            vec4: false,
            f16: false,
        };
        assert_eq!(product_candidates(shape, &gpu.tuning()).len(), 1);
        gpu.product_variants().note(shape);
        drop(Tensor::zeros(&[1 << 20], &device).unwrap());
        let held = gpu.counters().bytes_allocated;
        let tuned = tune::tune_products(gpu, &mut Cache::default())
            .await
            .unwrap();
        gpu.use_emulated_kernels(None);
        assert_eq!(tuned.timed, 0, "{tuned:?}");
        assert!(gpu.product_variants().chosen(&shape).is_some());
        assert_eq!(gpu.counters().bytes_allocated, held, "the pool was emptied");
    });
}
