//! The neural-network ops: softmax, cross-entropy, embedding, the norms and dropout
//! (attention: tests/ops_attention.rs; convolution and pooling: tests/ops_conv_pool.rs).
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, check_op, indices, input, run, uniform};
use webgrad::{Device, Tensor};

#[test]
fn softmax_and_log_softmax_match_cpu() {
    run(async {
        check_op("softmax", &[input(&[13, 130], 1)], 1e-4, |_, t| {
            t[0].softmax()
        })
        .await;
        check_op("log_softmax", &[input(&[13, 130], 2)], 1e-4, |_, t| {
            t[0].log_softmax()
        })
        .await;
    });
}

#[test]
fn softmax_is_stable_for_large_logits() {
    run(async {
        let gpu = common::gpu().await;
        let x = Tensor::from_vec(vec![1000.0, 1001.0, 999.0, -1000.0], &[1, 4], &gpu).unwrap();
        let p = x.softmax().unwrap().to_vec().await.unwrap();
        assert!(p.iter().all(|v| v.is_finite()), "{p:?}");
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        let targets = Tensor::from_u32(vec![1], &[1], &gpu).unwrap();
        let loss = x.cross_entropy(&targets).unwrap().to_vec().await.unwrap()[0];
        assert!((loss - 0.407_606).abs() < 1e-4, "{loss}");
    });
}

#[test]
fn cross_entropy_matches_cpu() {
    run(async {
        let targets = indices(37, 11, 5);
        check_op("cross_entropy", &[input(&[37, 11], 1)], 1e-4, |d, t| {
            t[0].scale(3.0)?
                .cross_entropy(&Tensor::from_u32(targets.clone(), &[37], d)?)
        })
        .await;
        check_op(
            "cross_entropy wide",
            &[input(&[5, 300], 2)],
            1e-4,
            |d, t| t[0].cross_entropy(&Tensor::from_u32(vec![0, 299, 17, 150, 64], &[5], d)?),
        )
        .await;
    });
}

/// The mean cross-entropy as the loss itself, as the models train: its forward in one pass
/// for few logits (two, the rows' losses and their sum, for many), and its backward from the
/// 1 that backward starts from, with no pass filling a tensor with it: for few logits none at
/// all, the forward pass having made the gradient.
#[test]
fn the_mean_cross_entropy_as_the_loss_matches_cpu_in_few_passes() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        // 37 × 11 logits fit one pass; 300 × 300 are over its limit.
        for (rows, cols, one_pass) in [(37, 11, true), (300, 300, false)] {
            let (x, t) = (
                uniform(rows * cols, -3.0, 3.0, 7),
                indices(rows, cols as u32, 5),
            );
            let loss_of = |d: &Device| {
                let logits = Tensor::from_f64(x.clone(), &[rows, cols], d)?.with_grad();
                Ok::<_, webgrad::Error>((
                    logits.cross_entropy(&Tensor::from_u32(t.clone(), &[rows], d)?)?,
                    logits,
                ))
            };
            let (cpu_loss, cpu_logits) = loss_of(&Device::Cpu).unwrap();
            let cpu_grad = cpu_loss.backward().unwrap().take(&cpu_logits).unwrap();
            for emulated in [false, true] {
                context.use_emulated_kernels(Some(emulated));
                let name = format!("{rows} × {cols}, emulated kernels {emulated}");
                let mark = context.counters();
                let (loss, logits) = loss_of(&gpu).unwrap();
                let forward = context.counters().since(&mark).dispatches;
                let mark = context.counters();
                let grad = loss.backward().unwrap().take(&logits).unwrap();
                let backward = context.counters().since(&mark).dispatches;
                assert_eq!(
                    forward == 1,
                    one_pass,
                    "{name}: {forward} forward dispatches"
                );
                // In one pass the forward also made the logits' gradient for the loss's 1.
                let want_backward = if one_pass { 0 } else { 1 };
                assert_eq!(
                    backward, want_backward,
                    "{name}: backward took {backward} dispatches"
                );
                assert_eq!(loss.shape(), cpu_loss.shape(), "{name}: the loss's shape");
                let want = cpu_loss.to_vec_f64().await.unwrap();
                assert_close(
                    &format!("{name} loss"),
                    &loss.to_vec_f64().await.unwrap(),
                    &want,
                    1e-5,
                );
                let want = cpu_grad.to_vec_f64().await.unwrap();
                assert_close(
                    &format!("{name} gradient"),
                    &grad.to_vec_f64().await.unwrap(),
                    &want,
                    1e-5,
                );
            }
            context.use_emulated_kernels(None);
        }
    });
}

#[test]
fn embedding_gathers_and_scatter_adds() {
    run(async {
        let idx = indices(65, 11, 7);
        check_op("embedding", &[input(&[11, 19], 1)], 1e-5, |d, t| {
            t[0].embedding(&Tensor::from_u32(idx.clone(), &[5, 13], d)?)
        })
        .await;
        // 701 indices: on GPUs the backward sums two chunks, of 351 and 350.
        let idx = indices(701, 11, 8);
        check_op("embedding of many", &[input(&[11, 6], 2)], 1e-4, |d, t| {
            t[0].embedding(&Tensor::from_u32(idx.clone(), &[701], d)?)
        })
        .await;
        // Rows wider than a workgroup's 1,024 columns a pass, and indices over two tiles: four
        // tiles in all, so that the backward reuses a tile mask it cleared.
        let idx = indices(300, 3, 12);
        check_op(
            "embedding of wide rows",
            &[input(&[3, 1100], 11)],
            1e-4,
            |d, t| t[0].embedding(&Tensor::from_u32(idx.clone(), &[300], d)?),
        )
        .await;
    });
}

#[test]
fn layernorm_matches_cpu() {
    run(async {
        // The GPU kernels' backward takes chunks of rows: 39 rows make 39 chunks of one row,
        // 2051 rows 684 chunks of three, the last one of two, rows taken 4 at a time. 70
        // columns: two per thread, the second ragged; 300: the threads' loads of four columns
        // at a time go round twice.
        for (rows, cols, seed) in [
            (&[3, 13][..], 70, 1),
            (&[7, 293][..], 70, 4),
            (&[3, 5][..], 300, 5),
        ] {
            let x = input(&[rows, &[cols]].concat(), seed);
            let (w, b) = (input(&[cols], 2), input(&[cols], 3));
            let ins = [x, w, b];
            check_op("layernorm", &ins, 1e-4, |_, t| {
                t[0].layernorm(&t[1], &t[2], 1e-5)
            })
            .await;
            // x also on a residual connection, as a transformer block's input is: its gradient
            // from there is added into dx by the fused kernel (`backward_adding`), once.
            check_op("x + layernorm(x)", &ins, 1e-4, |_, t| {
                t[0].add(&t[0].layernorm(&t[1], &t[2], 1e-5)?)
            })
            .await;
        }
    });
}

#[test]
fn rmsnorm_matches_cpu() {
    run(async {
        // One row of 70 columns per workgroup lane pair (two per thread, the second ragged),
        // a few rows and many.
        for (rows, seed) in [(&[3, 13][..], 1), (&[7, 293][..], 4)] {
            let x = input(&[rows, &[70]].concat(), seed);
            check_op("rmsnorm", &[x, input(&[70], 2)], 1e-4, |_, t| {
                t[0].rmsnorm(&t[1], 1e-5)
            })
            .await;
        }
    });
}

/// torch.nn.RMSNorm in float64 on the inputs `rmsnorm_matches_pytorch` builds
/// (tools/rmsnorm_golden.py, PyTorch 2.11.0): the output, dx and dweight of sum(y * c).
const RMS_Y: [f64; 24] = [
    0.086925459,
    0.35577925,
    0.668748314,
    0.969576941,
    1.19527462,
    1.28797476,
    1.20678269,
    0.937465821,
    0.275731773,
    -0.0373264602,
    -0.443519978,
    -0.868295369,
    -1.22073628,
    -1.4099341,
    -1.36268155,
    -1.0393651,
    -0.123148921,
    0.112903593,
    0.43507547,
    0.796111681,
    1.13257517,
    1.37573482,
    1.46433655,
    1.35705969,
];
const RMS_DX: [f64; 24] = [
    0.216504992,
    0.0957732978,
    -0.00663335012,
    -0.0720378461,
    -0.0876696465,
    -0.0486065092,
    0.0413655794,
    0.170094951,
    0.312450197,
    0.269305603,
    0.211116911,
    0.14354677,
    0.0713187338,
    -0.00246883251,
    -0.0767560943,
    -0.152605562,
    -0.137365805,
    -0.0442688449,
    0.0371592341,
    0.0888818698,
    0.0957884276,
    0.0479173107,
    -0.0579897061,
    -0.217815957,
];
const RMS_DW: [f64; 8] = [
    0.571539467,
    0.499781525,
    0.397633563,
    0.269642426,
    0.124386852,
    -0.0266602952,
    -0.170879462,
    -0.296516266,
];

#[test]
fn rmsnorm_matches_pytorch() {
    run(async {
        let gpu = common::gpu().await;
        for (device, on) in [(webgrad::Device::Cpu, "the CPU"), (gpu, "the GPU")] {
            let x: Vec<f64> = (0..24)
                .map(|i| 2.0 * (0.37 * i as f64).sin() + 0.3)
                .collect();
            let w: Vec<f64> = (0..8).map(|j| 0.5 + 0.1 * j as f64).collect();
            let c: Vec<f64> = (0..24).map(|i| (0.11 * i as f64).cos()).collect();
            let x = Tensor::from_f64(x, &[3, 8], &device).unwrap().with_grad();
            let w = Tensor::from_f64(w, &[8], &device).unwrap().with_grad();
            let c = Tensor::from_f64(c, &[3, 8], &device).unwrap();
            let y = x.rmsnorm(&w, 1e-5).unwrap();
            let grads = y.mul(&c).unwrap().sum_all().unwrap().backward().unwrap();
            let close = |name: &str, got: Vec<f64>, want: &[f64]| {
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    assert!(
                        (g - w).abs() < 2e-5,
                        "{name}[{i}] on {on}: {g} against PyTorch's {w}"
                    );
                }
            };
            close("y", y.to_vec_f64().await.unwrap(), &RMS_Y);
            close(
                "dx",
                grads.get(&x).unwrap().to_vec_f64().await.unwrap(),
                &RMS_DX,
            );
            close(
                "dw",
                grads.get(&w).unwrap().to_vec_f64().await.unwrap(),
                &RMS_DW,
            );
        }
    });
}

#[test]
fn dropout_is_the_same_on_both_backends_and_repeats_with_its_seed() {
    run(async {
        check_op("dropout", &[input(&[9, 131], 1)], 1e-6, |_, t| {
            t[0].dropout(0.3, 42)
        })
        .await;
        let gpu = common::gpu().await;
        let x = Tensor::full(&[4000], 1.0, &gpu).unwrap();
        let a = x.dropout(0.25, 7).unwrap().to_vec().await.unwrap();
        let b = x.dropout(0.25, 7).unwrap().to_vec().await.unwrap();
        let c = x.dropout(0.25, 8).unwrap().to_vec().await.unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let dropped = a.iter().filter(|v| **v == 0.0).count() as f64 / 4000.0;
        assert!((dropped - 0.25).abs() < 0.03, "dropped {dropped}");
        assert!(a
            .iter()
            .all(|v| *v == 0.0 || (*v - 1.0 / 0.75).abs() < 1e-6));
        let cpu = Tensor::full(&[4000], 1.0, &Device::Cpu)
            .unwrap()
            .dropout(0.25, 7)
            .unwrap()
            .to_vec()
            .await
            .unwrap();
        assert_eq!(a, cpu);
    });
}

/// An output layer and its loss in chunks of rows (GPT-2's logits never whole): 150 rows in
/// chunks of 64 (the last one short), a class masked by the bias, give the loss and gradients
/// of the logits made whole, the weight trained or frozen, and the loss alone without them;
/// so do 9,000 classes, which the GPU's kernels take in three blocks of columns.
#[test]
fn the_linear_cross_entropy_in_chunks_matches_the_logits_made_whole() {
    run(async {
        let (rows, width, classes) = (150, 12, 30);
        let (mask, targets) = masked_last_class(rows, classes);
        let inputs = [input(&[rows, width], 1), input(&[classes, width], 2)];
        check_op("linear_cross_entropy", &inputs, 1e-4, |d, t| {
            let mask = Tensor::from_vec(mask.clone(), &[classes], d)?;
            let targets = Tensor::from_u32(targets.clone(), &[rows], d)?;
            t[0].linear_cross_entropy((&t[1], Some(&mask)), &targets, 64)
        })
        .await;
        chunks_match_the_whole(rows, width, classes).await;
        chunks_match_the_whole(70, 4, 9000).await;
    });
}

/// A bias masking the last of `classes` as a padded vocabulary's pads are, and `rows`
/// targets that are never it.
fn masked_last_class(rows: usize, classes: usize) -> (Vec<f32>, Vec<u32>) {
    let mut mask = vec![0.0; classes];
    mask[classes - 1] = -1e30;
    (mask, indices(rows, classes as u32 - 1, 4))
}

/// The chunked loss, 64 rows a chunk, against the logits made whole, on the CPU and the GPU.
async fn chunks_match_the_whole(rows: usize, width: usize, classes: usize) {
    let (mask, targets) = masked_last_class(rows, classes);
    let gpu = common::gpu().await;
    for (device, weight_trains) in [(Device::Cpu, true), (gpu.clone(), true), (gpu, false)] {
        let name = format!(
            "{classes} classes on {}, weight trains {weight_trains}",
            device.name()
        );
        let x = Tensor::from_f64(uniform(rows * width, -1.0, 1.0, 1), &[rows, width], &device)
            .unwrap()
            .with_grad();
        let w = Tensor::from_f64(
            uniform(classes * width, -1.0, 1.0, 2),
            &[classes, width],
            &device,
        )
        .unwrap();
        let w = if weight_trains { w.with_grad() } else { w };
        let mask = Tensor::from_vec(mask.clone(), &[classes], &device).unwrap();
        let t = Tensor::from_u32(targets.clone(), &[rows], &device).unwrap();
        let whole = x
            .linear(&w, Some(&mask))
            .unwrap()
            .cross_entropy(&t)
            .unwrap();
        let chunked = x.linear_cross_entropy((&w, Some(&mask)), &t, 64).unwrap();
        let unrecorded = webgrad::no_grad(|| x.linear_cross_entropy((&w, Some(&mask)), &t, 64));
        let want = whole.to_vec_f64().await.unwrap();
        for (what, loss) in [
            ("loss", &chunked),
            ("loss without gradients", &unrecorded.unwrap()),
        ] {
            let got = loss.to_vec_f64().await.unwrap();
            assert_close(&format!("{name}: {what}"), &got, &want, 1e-6);
        }
        let (mut want, mut got) = (whole.backward().unwrap(), chunked.backward().unwrap());
        assert_eq!(
            got.get(&w).is_some(),
            weight_trains,
            "{name}: the weight's gradient"
        );
        for (what, p) in [("input", &x), ("weight", &w)] {
            let Some(want) = want.take(p) else { continue };
            let got = got.take(p).unwrap().to_vec_f64().await.unwrap();
            let want = want.to_vec_f64().await.unwrap();
            assert_close(&format!("{name}: the {what}'s gradient"), &got, &want, 1e-5);
        }
    }
}

/// Rows of 70,000 classes, longer than a thread of an emulated GPU may loop over (llvmpipe ends
/// a thread's loops after 65,535 iterations in all): the cross-entropy, its gradient and the
/// softmax match the CPU on both kernel sets.
#[test]
fn the_cross_entropy_and_softmax_of_long_rows_match_cpu() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let (rows, cols) = (4, 70_000);
        let (x, t) = (
            uniform(rows * cols, -3.0, 3.0, 1),
            indices(rows, cols as u32, 2),
        );
        let outputs = |d: &Device| {
            let logits = Tensor::from_f64(x.clone(), &[rows, cols], d)
                .unwrap()
                .with_grad();
            let targets = Tensor::from_u32(t.clone(), &[rows], d).unwrap();
            let loss = logits.cross_entropy(&targets).unwrap();
            let grad = loss.backward().unwrap().take(&logits).unwrap();
            [loss, grad, logits.softmax().unwrap()]
        };
        let mut want = Vec::new();
        for t in outputs(&Device::Cpu) {
            want.push(t.to_vec_f64().await.unwrap());
        }
        for emulated in [false, true] {
            context.use_emulated_kernels(Some(emulated));
            let names = ["loss", "gradient", "softmax"];
            for ((t, want), name) in outputs(&gpu).iter().zip(&want).zip(names) {
                let got = t.to_vec_f64().await.unwrap();
                assert_close(
                    &format!("{name}, emulated kernels {emulated}"),
                    &got,
                    want,
                    1e-5,
                );
            }
        }
        context.use_emulated_kernels(None);
    });
}
