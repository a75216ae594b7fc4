//! The least capable device WebGPU allows: a device opened with only the limits the standard
//! guarantees (16 KiB of workgroup memory, 256 invocations a workgroup, 8 storage buffers a
//! stage, 128 MiB bindings) trains every model family on the real-GPU kernels as the CPU does.
//! Natively the pipeline cache refuses a kernel that declares more workgroup memory than the
//! device allows (wgpu does not check it; browsers do), so a kernel too large for such a device
//! fails here. `WEBGRAD_LIMITS=webgpu` runs any test under these limits.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, run, uniform};
use webgrad::data::{digits_from_gzip, points, PointSet, Text};
use webgrad::gpu::{Gpu, LimitsAsked};
use webgrad::nn::Preset;
use webgrad::ops::ProductPath;
use webgrad::train::{Config, Family, Session, Task, TaskData};
use webgrad::{Device, Tensor};

/// Training losses of `steps` steps of `config` on `data`, on `device`.
async fn losses(config: &Config, data: &TaskData, device: &Device, steps: usize) -> Vec<f64> {
    let mut s = Session::new(config.clone(), data.clone(), device).unwrap();
    let mut out = Vec::new();
    for _ in 0..steps {
        s.train_step().unwrap();
        out.push(s.check().await.unwrap() as f64);
    }
    out
}

#[test]
fn every_family_trains_under_webgpus_guaranteed_limits_as_on_the_cpu() {
    run(async {
        let gpu = Gpu::open(LimitsAsked::Guaranteed).await.unwrap();
        assert_eq!(gpu.limits().max_compute_workgroup_storage_size, 16 << 10);
        // The kernels of real GPUs, with workgroup memory and barriers, on any adapter.
        gpu.use_emulated_kernels(Some(false));
        let device = Device::Gpu(gpu.clone());
        let digits = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/web/data/digits.bin.gz"
        ))
        .unwrap();
        let digits = TaskData::Labelled(digits_from_gzip(&digits).unwrap());
        let spiral = TaskData::Labelled(points(PointSet::Spiral, 2000, 0.05, 0.2, 0).unwrap());
        let text = Text::new(&"to be or not to be, that is the question. ".repeat(60)).unwrap();
        let vocab = text.tokenizer.len();
        let runs = [
            (
                "spiral MLP",
                Config::defaults(Task::Spiral, None, None, 0),
                spiral,
            ),
            (
                "digits CNN",
                Config::defaults(Task::Digits, Some(Family::Cnn), None, 0),
                digits,
            ),
            (
                "text GPT",
                Config::defaults(Task::Text, None, Some(Preset::Tiny), vocab),
                TaskData::Text(text),
            ),
        ];
        // A product with enough 128 × 128 tiles for the large-tile kernel where it fits: on the
        // adapter's limits it takes it, on the guaranteed ones (16 KiB, less than its 20) the
        // 64 × 64 kernel, with the same result.
        let product = |d: &Device| {
            let a = Tensor::from_f64(uniform(1024 * 64, -1.0, 1.0, 1), &[1024, 64], d)?;
            let b = Tensor::from_f64(uniform(64 * 2048, -1.0, 1.0, 2), &[64, 2048], d)?;
            a.matmul(&b)
        };
        let on_cpu = product(&Device::Cpu).unwrap().to_vec_f64().await.unwrap();
        let roomy = Gpu::open(LimitsAsked::Adapter).await.unwrap();
        roomy.use_emulated_kernels(Some(false));
        for (g, large) in [(&roomy, true), (&gpu, false)] {
            let on_gpu = product(&Device::Gpu(g.clone())).unwrap();
            let on_gpu = on_gpu.to_vec_f64().await.unwrap();
            let errors = g.take_errors();
            assert!(
                errors.is_empty(),
                "a large product: the device reported {errors:?}"
            );
            assert_close("a large product", &on_gpu, &on_cpu, 1e-4);
            let kernels = (
                g.dispatches_of(ProductPath::LargeTiles.family()),
                g.dispatches_of(ProductPath::SmallTiles.family()),
            );
            let want = if large { (1, 0) } else { (0, 1) };
            assert_eq!(
                kernels, want,
                "(large, small) products, the large ones fitting: {large}"
            );
        }
        for (name, config, data) in runs {
            let mut config = config.unwrap();
            config.batch = config.batch.min(16);
            let on_gpu = losses(&config, &data, &device, 3).await;
            let errors = gpu.take_errors();
            assert!(errors.is_empty(), "{name}: the device reported {errors:?}");
            let on_cpu = losses(&config, &data, &Device::Cpu, 3).await;
            assert_close(&format!("{name} losses"), &on_gpu, &on_cpu, 1e-4);
        }
    });
}
