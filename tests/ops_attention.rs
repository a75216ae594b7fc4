//! Causal self-attention: the fused kernels (q, k and v apart or packed, each block size that
//! fits), the path through the T×T scores, and the mask of the future, against the CPU.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{check_op, input, run};
use webgrad::gpu::Tuning;
use webgrad::{Device, Tensor};

#[test]
fn causal_attention_matches_cpu() {
    run(async {
        // Heads of 8 with 37 positions, and 70 (more than a workgroup's rows and two blocks of
        // keys); heads of 64, the widest the tiled GPU kernels keep in registers; heads of 6,
        // which those kernels leave to the row kernels.
        for (b, t, c, h) in [
            (2, 37, 24, 3),
            (1, 70, 16, 2),
            (1, 70, 128, 2),
            (1, 9, 12, 2),
        ] {
            let ins = [
                input(&[b, t, c], 1),
                input(&[b, t, c], 2),
                input(&[b, t, c], 3),
            ];
            check_op(&format!("attention t={t}"), &ins, 1e-4, |_, x| {
                x[0].attention(&x[1], &x[2], h)
            })
            .await;
        }
    });
}

#[test]
fn packed_attention_matches_cpu() {
    run(async {
        // q, k and v side by side in one [B, T, 3C] tensor, read in place by the tiled GPU
        // kernels (heads of 8 and of 64, ragged blocks), sliced out elsewhere.
        for (b, t, c, h) in [(2, 37, 24, 3), (1, 70, 128, 2)] {
            check_op(
                &format!("packed attention t={t} c={c}"),
                &[input(&[b, t, 3 * c], 4)],
                1e-4,
                |_, x| x[0].attention_packed(h),
            )
            .await;
        }
        let gpu = common::gpu().await;
        let odd = Tensor::zeros(&[1, 4, 10], &gpu).unwrap();
        let err = odd.attention_packed(1).unwrap_err();
        assert!(err.to_string().contains("3 × channels"), "{err}");
        let err = Tensor::zeros(&[1, 4, 12], &gpu)
            .unwrap()
            .attention_packed(3)
            .unwrap_err();
        assert!(err.to_string().contains("3 heads do not divide 4"), "{err}");
    });
}

/// The tiled attention's other blocks (16 where 32 does not fit the workgroup memory, 64 where a
/// device is given it): over ragged blocks, each block that fits against the CPU.
#[test]
fn packed_attention_matches_cpu_with_each_block() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let opened = context.tuning();
        for block in [16, 64] {
            context.set_tuning(Tuning {
                attention_block: Some(block),
                ..opened
            });
            for (b, t, c, h) in [(2, 37, 96, 3), (1, 70, 128, 2)] {
                check_op(
                    &format!("packed attention in blocks of {block}, t={t} c={c}"),
                    &[input(&[b, t, 3 * c], 4)],
                    1e-4,
                    |_, x| x[0].attention_packed(h),
                )
                .await;
            }
        }
        context.set_tuning(opened);
    });
}

#[test]
fn attention_through_the_scores_matches_the_other_paths() {
    run(async {
        // The path long sequences take on real GPUs (heads gathered, batched score matmuls, a
        // causal softmax), at small ragged sizes, heads of 8 and of 64: on the GPU against the
        // CPU's row attention, and on the CPU against the GPU's tiled or row kernels. With 64
        // heads of 202 positions the products are large enough for the 128 × 128 tiles, which
        // skip what causality makes zero (a whole tile of scores, half of K in others). 261
        // keys: the softmax's loads of four columns at a time go round twice.
        for (b, t, c, h) in [
            (2, 37, 24, 3),
            (1, 70, 128, 2),
            (32, 202, 8, 2),
            (1, 261, 8, 1),
        ] {
            for scores_on_cpu in [false, true] {
                check_op(
                    &format!("attention via scores t={t} c={c} (on the CPU: {scores_on_cpu})"),
                    &[input(&[b, t, 3 * c], 6)],
                    1e-4,
                    |device, x| match (device, scores_on_cpu) {
                        (Device::Cpu, true) | (Device::Gpu(_), false) => {
                            x[0].attention_via_scores(h)
                        }
                        _ => x[0].attention_packed(h),
                    },
                )
                .await;
            }
        }
    });
}

#[test]
fn packed_attention_backward_survives_a_change_of_kernels() {
    run(async {
        // Forward on the tiled kernels, backward on the row kernels: both keep the softmax's
        // log-sum-exp in the same layout, so the gradient still matches the CPU's.
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("gpu() gives a GPU")
        };
        let (shape, values) = ([2, 37, 72], common::uniform(2 * 37 * 72, -1.0, 1.0, 5));
        let grad = |device: Device, switch: bool| {
            let values = values.clone();
            async move {
                let x = Tensor::from_f64(values, &shape, &device)
                    .unwrap()
                    .with_grad();
                let y = x.attention_packed(3).unwrap();
                let loss = y.mul(&y).unwrap().sum_all().unwrap();
                if switch {
                    context.use_emulated_kernels(Some(true));
                }
                let grads = loss.backward().unwrap();
                grads.get(&x).unwrap().to_vec_f64().await.unwrap()
            }
        };
        let want = grad(Device::Cpu, false).await;
        context.use_emulated_kernels(Some(false));
        let got = grad(gpu.clone(), true).await;
        context.use_emulated_kernels(None);
        common::assert_close("packed attention gradient", &got, &want, 1e-4);
    });
}

#[test]
fn attention_masks_the_future() {
    run(async {
        let gpu = common::gpu().await;
        let (b, t, c) = (1, 5, 4);
        let q = common::uniform(b * t * c, -1.0, 1.0, 1);
        let k = common::uniform(b * t * c, -1.0, 1.0, 2);
        let mut v = common::uniform(b * t * c, -1.0, 1.0, 3);
        let make = |d: &Vec<f64>| Tensor::from_f64(d.clone(), &[b, t, c], &gpu).unwrap();
        let before = make(&q)
            .attention(&make(&k), &make(&v), 2)
            .unwrap()
            .to_vec()
            .await
            .unwrap();
        // Changing the last value must not change any earlier position's output.
        v[(t - 1) * c..].iter_mut().for_each(|x| *x += 10.0);
        let after = make(&q)
            .attention(&make(&k), &make(&v), 2)
            .unwrap()
            .to_vec()
            .await
            .unwrap();
        assert_eq!(before[..(t - 1) * c], after[..(t - 1) * c]);
        assert_ne!(before[(t - 1) * c..], after[(t - 1) * c..]);
        let err = make(&q).attention(&make(&k), &make(&v), 3).unwrap_err();
        assert!(
            err.to_string().contains("3 heads do not divide 4 channels"),
            "{err}"
        );
    });
}

/// Packed attention takes the path chosen for its shape on the device (the autotuner's), its
/// backward the forward's, each matching the CPU; a chosen path that cannot run gives way to
/// the rule's; a shape run without a choice is noted, and the autotuner times it on each of
/// its paths, chooses one and remembers it.
#[test]
fn packed_attention_takes_the_path_timed_for_its_shape() {
    use webgrad::gpu::{AttentionPath, AttentionShape};
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("gpu() gives a GPU")
        };
        // The real GPUs' kernels: the tiled ones and, from 256 positions, the scores (lavapipe
        // has only the row kernels).
        context.use_emulated_kernels(Some(false));
        let (t, c, h) = (256, 16, 2);
        let shape = AttentionShape {
            batch: 1,
            t,
            heads: h,
            d: c / h,
            f16: false,
        };
        let values = common::uniform(320 * 3 * c, -1.0, 1.0, 8);
        let grad = |device: Device| {
            let values = values[..t * 3 * c].to_vec();
            async move {
                let x = Tensor::from_f64(values, &[1, t, 3 * c], &device)
                    .unwrap()
                    .with_grad();
                let y = x.attention_packed(h).unwrap();
                let loss = y.mul(&y).unwrap().sum_all().unwrap();
                let out = y.to_vec_f64().await.unwrap();
                let grads = loss.backward().unwrap();
                (out, grads.get(&x).unwrap().to_vec_f64().await.unwrap())
            }
        };
        let (want_out, want_grad) = grad(Device::Cpu).await;
        let families = [
            "causal_softmax",
            "causal_softmax_backward",
            "attention_tiled",
            "attention_tiled_dq",
        ];
        let runs = || families.map(|f| context.dispatches_of(f));
        // The matrix units: not on lavapipe, so the rule's (the scores at 256 positions).
        for (path, expected) in [
            (AttentionPath::Tiled, [0, 0, 1, 1]),
            (AttentionPath::Scores, [1, 1, 0, 0]),
            (AttentionPath::Matrix, [1, 1, 0, 0]),
        ] {
            context.attention_paths().choose(shape, path);
            let before = runs();
            let (out, g) = grad(gpu.clone()).await;
            let after = runs();
            let ran: Vec<u64> = after.iter().zip(before).map(|(a, b)| a - b).collect();
            assert_eq!(ran, expected, "{path:?}: dispatches of {families:?}");
            common::assert_close(&format!("{path:?} output"), &out, &want_out, 1e-4);
            common::assert_close(&format!("{path:?} gradient"), &g, &want_grad, 1e-4);
        }
        assert!(!context.attention_paths().any_noted());

        // Another length has no choice yet: run, it is noted, then timed.
        let input = Tensor::from_f64(values.clone(), &[1, 320, 3 * c], &gpu);
        drop(input.unwrap().attention_packed(h).unwrap());
        let timed = AttentionShape { t: 320, ..shape };
        assert!(context.attention_paths().any_noted());
        let mut cache = webgrad::tune::Cache::default();
        let tuned = webgrad::tune::tune_products(context, &mut cache)
            .await
            .unwrap();
        assert_eq!(tuned.attention, 1, "{tuned:?}");
        let chosen = context.attention_paths().chosen(&timed);
        assert!(
            matches!(chosen, Some(AttentionPath::Scores | AttentionPath::Tiled)),
            "{chosen:?}"
        );
        assert!(!context.attention_paths().any_noted());
        let text = cache.to_text();
        let line = format!("\tattention 1 320 {h} {}\t", c / h);
        assert!(text.contains(&line), "{text}");
        assert!(tuned.sentence().unwrap().contains("attention"), "{tuned:?}");
        context.use_emulated_kernels(None);
    });
}
