//! Reductions (sums, max, argmax) and movement ops (slices, pads, reshapes, gathers in rows of
//! four): GPU against the CPU reference, gradients against finite differences.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{check_op, input, run};
use webgrad::{Device, Tensor};

#[test]
fn reductions_match_cpu() {
    run(async {
        let shape = [5, 67, 9];
        for axis in 0..3 {
            check_op(&format!("sum {axis}"), &[input(&shape, 1)], 1e-4, |_, t| {
                t[0].sum(axis, false)
            })
            .await;
            check_op(
                &format!("mean {axis}"),
                &[input(&shape, 2)],
                1e-4,
                |_, t| t[0].mean(axis, true),
            )
            .await;
            check_op(&format!("max {axis}"), &[input(&shape, 3)], 1e-4, |_, t| {
                t[0].max(axis, false)
            })
            .await;
        }
        check_op("sum_all", &[input(&[1031], 4)], 1e-4, |_, t| t[0].sum_all()).await;
        // Long, wide columns are summed in chunks first; on GPUs also ragged chunks of rows
        // with an outer axis (301 rows), and columns of at most 256 rows in one pass.
        for (shape, axis) in [
            ([1, 4096, 70], 1),
            ([3, 301, 65], 1),
            ([3, 130, 65], 1),
            ([2, 5, 80], 1),
        ] {
            check_op(
                &format!("sum of wide columns {shape:?}"),
                &[input(&shape, 7)],
                1e-4,
                |_, t| t[0].sum(axis, false),
            )
            .await;
        }
        // Summing no rows gives zeros with either kernel set.
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("gpu() gives a GPU")
        };
        for emulated in [false, true] {
            context.use_emulated_kernels(Some(emulated));
            let empty = Tensor::zeros(&[0, 70], &gpu).unwrap();
            let sums = empty.sum(0, false).unwrap().to_vec().await.unwrap();
            assert_eq!(sums, vec![0.0; 70], "emulated kernels: {emulated}");
        }
        context.use_emulated_kernels(None);
        check_op("mean_all", &[input(&[3, 343], 5)], 1e-4, |_, t| {
            t[0].mean_all()
        })
        .await;
        check_op("max_all", &[input(&[7, 149], 6)], 1e-4, |_, t| {
            t[0].max_all()
        })
        .await;
    });
}

/// `values` of shape `from` summed down to `to` by the rule of broadcasting, element by element:
/// the reference for `sum_to_shape`, whose CPU path shares its way of merging axes.
fn summed_by_hand(values: &[f64], from: &[usize], to: &[usize]) -> Vec<f64> {
    let pad = from.len() - to.len();
    let mut out = vec![0.0; to.iter().product()];
    for (i, v) in values.iter().enumerate() {
        let (mut rest, mut at, mut scale) = (i, 0, 1);
        for axis in (0..from.len()).rev() {
            let index = rest % from[axis];
            rest /= from[axis];
            if axis >= pad && to[axis - pad] != 1 {
                at += index * scale;
                scale *= to[axis - pad];
            }
        }
        out[at] += v;
    }
    out
}

#[test]
fn sum_to_shape_matches_a_sum_by_hand() {
    run(async {
        let gpu = common::gpu().await;
        // A convolution's bias ([n, c, h, w] to [c] and [1, c, 1, 1]), runs of reduced axes
        // apart and together, a size-1 axis inside a run, a batch of 130 over wide columns.
        let cases: [(&[usize], &[usize]); 7] = [
            (&[4, 6, 5, 7], &[6, 1, 1]),
            (&[4, 6, 5, 7], &[1, 6, 1, 1]),
            (&[4, 6, 5, 7], &[4, 1, 5, 1]),
            (&[4, 6, 5, 7], &[7]),
            (&[2, 1, 5, 3], &[1, 1, 5, 1]),
            (&[130, 65, 3, 3], &[65, 1, 1]),
            (&[3, 4], &[3, 4]),
        ];
        for (from, to) in cases {
            let x = input(from, 13);
            let want = summed_by_hand(&x.values, from, to);
            for (device, emulated) in common::every_backend(&gpu) {
                if let Device::Gpu(context) = &device {
                    context.use_emulated_kernels(emulated);
                }
                let t = Tensor::from_f64(x.values.clone(), from, &device).unwrap();
                let got = t.sum_to_shape(to).unwrap();
                assert_eq!(got.shape(), to);
                let what = format!("{from:?} to {to:?}, emulated GPU kernels {emulated:?}");
                common::assert_close(&what, &got.to_vec_f64().await.unwrap(), &want, 1e-5);
            }
        }
        if let Device::Gpu(context) = &gpu {
            context.use_emulated_kernels(None);
        }
        check_op("sum_to_shape", &[input(&[4, 6, 5, 7], 14)], 1e-4, |_, t| {
            t[0].sum_to_shape(&[6, 1, 1])
        })
        .await;
    });
}

/// Dispatches on the kernels for real GPUs: columns of up to 256 rows in one pass, a
/// convolution's bias gradient in two (its rows of pixels, then the batch).
#[test]
fn short_columns_and_a_bias_over_channels_take_few_dispatches() {
    run(async {
        let device = common::gpu().await;
        let Device::Gpu(gpu) = &device else {
            unreachable!("gpu() gives a GPU")
        };
        gpu.use_emulated_kernels(Some(false));
        let ones = |shape: &[usize]| {
            Tensor::from_vec(vec![1.0; shape.iter().product()], shape, &device).unwrap()
        };
        for (rows, want) in [(256, 1), (257, 2)] {
            let mark = gpu.counters();
            let sums = ones(&[rows, 70]).sum(0, false).unwrap();
            let took = gpu.counters().since(&mark).dispatches;
            assert_eq!(sums.to_vec().await.unwrap(), vec![rows as f32; 70]);
            assert_eq!(took, want, "{rows} rows");
        }
        let mark = gpu.counters();
        let bias = ones(&[128, 64, 14, 14])
            .sum_to_shape(&[1, 64, 1, 1])
            .unwrap();
        let took = gpu.counters().since(&mark).dispatches;
        assert_eq!(
            bias.to_vec().await.unwrap(),
            vec![(128 * 14 * 14) as f32; 64]
        );
        assert_eq!(took, 2, "the bias over channels");
        gpu.use_emulated_kernels(None);
    });
}

#[test]
fn argmax_picks_the_first_maximum() {
    run(async {
        let gpu = common::gpu().await;
        let x =
            Tensor::from_vec(vec![1.0, 3.0, 3.0, -1.0, 0.0, 5.0, 2.0, 5.0], &[2, 4], &gpu).unwrap();
        assert_eq!(x.argmax(1).unwrap().to_vec_u32().await.unwrap(), vec![1, 1]);
        assert_eq!(
            x.argmax(0).unwrap().to_vec_u32().await.unwrap(),
            vec![0, 1, 0, 1]
        );
    });
}

#[test]
fn movement_in_rows_of_four_matches_cpu() {
    run(async {
        // Innermost axes of 8: the copies that keep them whole move vec4s (src/ops/copy.rs);
        // an offset of 2 or a moved innermost axis falls back to single floats.
        let x = || input(&[3, 5, 8], 7);
        check_op("permute, rows kept", &[x()], 1e-6, |_, t| {
            t[0].permute(&[1, 0, 2])
        })
        .await;
        check_op("permute, rows moved", &[x()], 1e-6, |_, t| {
            t[0].permute(&[2, 0, 1])
        })
        .await;
        check_op("slice of whole fours", &[x()], 1e-6, |_, t| {
            t[0].slice(2, 4, 4)
        })
        .await;
        check_op("slice from 2", &[x()], 1e-6, |_, t| t[0].slice(2, 2, 4)).await;
        check_op(
            "concat of rows of 8",
            &[x(), input(&[3, 2, 8], 8)],
            1e-6,
            |_, t| Tensor::concat(&[t[0].clone(), t[1].clone()], 1),
        )
        .await;
        check_op("pad to 12", &[x()], 1e-6, |_, t| t[0].pad(2, (0, 4), 0.5)).await;
    });
}

#[test]
fn movement_ops_match_cpu() {
    run(async {
        let x = || input(&[3, 5, 7], 1);
        check_op("reshape", &[x()], 1e-6, |_, t| {
            t[0].reshape(&[15, 7])?.exp()
        })
        .await;
        check_op("permute", &[x()], 1e-6, |_, t| t[0].permute(&[2, 0, 1])).await;
        check_op("transpose", &[x()], 1e-6, |_, t| t[0].transpose(-1, 0)).await;
        check_op("slice", &[x()], 1e-6, |_, t| t[0].slice(1, 1, 3)).await;
        check_op("concat", &[x(), input(&[3, 2, 7], 2)], 1e-6, |_, t| {
            Tensor::concat(&[t[0].clone(), t[1].clone()], 1)
        })
        .await;
        check_op("expand", &[input(&[5, 1], 3)], 1e-6, |_, t| {
            t[0].expand(&[4, 5, 67])
        })
        .await;
        check_op("slice of permute", &[input(&[40, 9], 4)], 1e-6, |_, t| {
            t[0].transpose(0, 1)?.slice(1, 3, 33)
        })
        .await;
        check_op("strided slice", &[x()], 1e-6, |_, t| {
            t[0].slice_step(2, 1, 3, 2)
        })
        .await;
        check_op("strided slice, first axis", &[x()], 1e-6, |_, t| {
            t[0].slice_step(0, 0, 2, 2)
        })
        .await;
        check_op(
            "strided slice of permute",
            &[input(&[40, 9], 5)],
            1e-6,
            |_, t| t[0].transpose(0, 1)?.slice_step(1, 1, 13, 3),
        )
        .await;
        check_op("pad", &[x()], 1e-6, |_, t| t[0].pad(1, (2, 3), 0.0)).await;
        check_op("pad with a value, last axis", &[x()], 1e-6, |_, t| {
            t[0].pad(-1, (0, 4), -1.5)?.exp()
        })
        .await;
    });
}

#[test]
fn strided_slices_and_pads_take_exactly_the_elements_asked_for() {
    run(async {
        let gpu = common::gpu().await;
        let x = Tensor::from_vec((0..10).map(|v| v as f32).collect(), &[2, 5], &gpu).unwrap();
        let s = x.slice_step(1, 1, 2, 3).unwrap();
        assert_eq!(s.shape(), &[2, 2]);
        assert_eq!(s.to_vec().await.unwrap(), vec![1.0, 4.0, 6.0, 9.0]);
        let p = x.slice(1, 0, 2).unwrap().pad(1, (1, 2), 7.0).unwrap();
        assert_eq!(p.shape(), &[2, 5]);
        let want = [7.0, 0.0, 1.0, 7.0, 7.0, 7.0, 5.0, 6.0, 7.0, 7.0];
        assert_eq!(p.to_vec().await.unwrap(), want);
        // A step of 0, and elements past the end, are refused with the reason.
        let zero = x.slice_step(1, 0, 2, 0).unwrap_err().to_string();
        assert!(zero.contains("step must be at least 1"), "{zero}");
        let past = x.slice_step(1, 1, 3, 2).unwrap_err().to_string();
        assert!(past.contains("outside axis 1 of size 5"), "{past}");
        assert!(x.pad(2, (1, 1), 0.0).is_err());
    });
}

#[test]
fn reshape_shares_data_without_copying() {
    run(async {
        let gpu = common::gpu().await;
        let webgrad::Device::Gpu(g) = &gpu else {
            unreachable!()
        };
        let x = Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4], &gpu).unwrap();
        let before = g.counters();
        let y = x.reshape(&[2, 6]).unwrap();
        let after = g.counters().since(&before);
        assert_eq!((after.dispatches, after.buffers_created), (0, 0));
        assert_eq!(y.to_vec().await.unwrap(), x.to_vec().await.unwrap());
        assert!(x.reshape(&[5, 2]).is_err());
    });
}

/// `write_at` puts its source over the elements from `start` along an axis, in place, and
/// leaves the rest as they were, on both backends; one that does not fit, and a tensor that
/// needs a gradient, are refused.
#[test]
fn write_at_overwrites_only_its_part_in_place() {
    run(async {
        for device in [Device::Cpu, common::gpu().await] {
            // [2, 5, 3], positions 1..3 of axis 1 overwritten with [2, 2, 3].
            let dst =
                Tensor::from_vec((0..30).map(|i| i as f32).collect(), &[2, 5, 3], &device).unwrap();
            let src = Tensor::from_vec((0..12).map(|i| -(i as f32)).collect(), &[2, 2, 3], &device)
                .unwrap();
            dst.write_at(1, 1, &src).unwrap();
            let got = dst.to_vec().await.unwrap();
            let want: Vec<f32> = (0..30)
                .map(|i| {
                    let (b, p, c) = (i / 15, i / 3 % 5, i % 3);
                    match (1..3).contains(&p) {
                        true => -(((b * 2 + p - 1) * 3 + c) as f32),
                        false => i as f32,
                    }
                })
                .collect();
            assert_eq!(got, want, "{}", device.name());
            assert!(dst.write_at(1, 4, &src).is_err(), "past the axis");
            assert!(
                dst.write_at(2, 0, &src).is_err(),
                "another dimension differs"
            );
            let param = Tensor::zeros(&[2, 5, 3], &device).unwrap().with_grad();
            assert!(param.write_at(1, 0, &src).is_err(), "needs a gradient");
        }
    });
}
