//! Matmul (batched, transposed in place) and the linear layers over it; LoRA's layers are
//! tests/ops_lora.rs's, reductions and movement ops tests/ops_reduce_move.rs's.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{check_op, every_backend, input, leaf, run, stored, value_and_grads};
use webgrad::{Device, Tensor};

#[test]
fn matmul_matches_cpu_for_every_transpose_and_batch() {
    run(async {
        // Ragged edges for each tile of the emulated-GPU kernel: 16 × 16 and 8 × 8 per lane.
        for (m, k, n) in [(67, 45, 71), (40, 9, 13)] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                for batch in [&[][..], &[3][..]] {
                    let a = input(&stored(m, k, ta, batch), 1);
                    let b = input(&stored(k, n, tb, batch), 2);
                    let name = format!("matmul {m}x{k}x{n} ta={ta} tb={tb} batch={batch:?}");
                    check_op(&name, &[a, b], 1e-4, |_, t| t[0].matmul_t(&t[1], ta, tb)).await;
                }
            }
        }
    });
}

#[test]
fn weight_gradients_over_many_rows_split_the_long_dimension_correctly() {
    run(async {
        // 4608 rows: the weight gradient's K is cut into 8 chunks of 576, then summed.
        check_op(
            "x·wᵀ over many rows",
            &[input(&[4608, 5], 1), input(&[7, 5], 2)],
            1e-4,
            |_, t| t[0].matmul_t(&t[1], false, true),
        )
        .await;
        check_op(
            "x·w over many rows",
            &[input(&[4608, 5], 3), input(&[5, 7], 4)],
            1e-4,
            |_, t| t[0].matmul(&t[1]),
        )
        .await;
    });
}

#[test]
fn gelu_linear_residual_passes_its_gradient_through_the_gelu_in_the_store() {
    run(async {
        // residual + gelu(x)·wᵀ + b, whose backward multiplies x's gradient by GELU's
        // derivative as the product stores it: each kernel set; 64 × 64 tiles for x's
        // gradient of 5, 2048 and 8192 rows (the last 13 wide, stored one value at a time),
        // 128 × 128 for 8192 rows 260 wide (stored a vec4 at a time).
        for (rows, k, n) in [(5, 7, 9), (2048, 12, 70), (8192, 13, 130), (8192, 260, 12)] {
            let ins = [
                input(&[2, rows / 2, k], 1),
                input(&[n, k], 2),
                input(&[n], 3),
                input(&[2, rows / 2, n], 4),
            ];
            check_op(
                &format!("gelu linear {rows}x{k}x{n}"),
                &ins,
                1e-4,
                |_, t| t[0].gelu_linear_residual(&t[1], Some(&t[2]), &t[3]),
            )
            .await;
            // Without the residual (the path with dropout after the product).
            if k % 2 == 1 {
                let name = format!("gelu linear, no residual, {rows}x{k}x{n}");
                check_op(&name, &ins[..3], 1e-4, |_, t| {
                    t[0].gelu_linear(&t[1], Some(&t[2]))
                })
                .await;
            }
        }
    });
}

/// residual + dropout(linear(x)) with the dropout and the residual in the product's store
/// drops the elements `dropout` drops: on the CPU and with each GPU kernel set, its output
/// and its gradients equal those of the dropout and the sum as ops of their own. Shapes: 13
/// wide (stored one value at a time, 64 × 64 tiles) and 8192 rows 132 wide (128 × 128 tiles,
/// vec4 stores), with and without the GELU before the product.
#[test]
fn linear_residual_dropout_drops_what_dropout_drops() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!()
        };
        for ((rows, k, n), gelu) in [
            ((6, 7, 13), false),
            ((8192, 24, 132), false),
            ((8192, 24, 132), true),
        ] {
            for (device, emulated) in &every_backend(&gpu) {
                context.use_emulated_kernels(*emulated);
                let (x, w) = (leaf(&[2, rows / 2, k], 1, device), leaf(&[n, k], 2, device));
                let (b, r) = (leaf(&[n], 3, device), leaf(&[2, rows / 2, n], 4, device));
                let (p, seed) = (0.3, 1234);
                let fused = match gelu {
                    false => x.linear_residual_dropout((&w, Some(&b)), &r, p, seed),
                    true => x.gelu_linear_residual_dropout((&w, Some(&b)), &r, p, seed),
                };
                let h = if gelu { x.gelu().unwrap() } else { x.clone() };
                let product = h.linear(&w, Some(&b)).unwrap();
                let composed = r.add(&product.dropout(p, seed).unwrap()).unwrap();
                let what = format!(
                    "{rows}x{k}x{n}, gelu {gelu}, on {} {emulated:?}",
                    device.name()
                );
                let leaves = [&x, &w, &b, &r];
                let got = value_and_grads(&fused.unwrap(), &leaves).await;
                let want = value_and_grads(&composed, &leaves).await;
                // A dropped element leaves the residual alone: about 30 % of them.
                let rv = r.to_vec_f64().await.unwrap();
                let dropped = got[0].iter().zip(&rv).filter(|(o, r)| o == r).count();
                let share = dropped as f64 / rv.len() as f64;
                assert!((0.2..0.4).contains(&share), "{what}: {share} dropped");
                common::assert_parts_close(&what, "[out, dx, dw, db, dr]", &got, &want, 1e-5);
            }
        }
        context.use_emulated_kernels(None);
    });
}

/// `x.linear_relu(w, b)`, the ReLU applied as the product is stored, gives what
/// `x.linear(w, b).relu()` gives, values and gradients, on the CPU and with both GPU kernel
/// sets: 6 rows 13 wide (64 × 64 tiles, stored one value at a time), 128 rows 512 wide over
/// K = 784 (an MLP's first layer: K split, the ReLU in the pass that sums the chunks) and 8192
/// rows 132 wide (128 × 128 tiles, vec4 stores).
#[test]
fn linear_relu_is_linear_then_relu() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!()
        };
        for (rows, k, n) in [(6, 7, 13), (128, 784, 512), (8192, 24, 132)] {
            for (device, emulated) in &every_backend(&gpu) {
                context.use_emulated_kernels(*emulated);
                let (x, w) = (leaf(&[rows, k], 1, device), leaf(&[n, k], 2, device));
                let b = leaf(&[n], 3, device);
                let leaves = [&x, &w, &b];
                let fused = x.linear_relu(&w, Some(&b)).unwrap();
                let got = value_and_grads(&fused, &leaves).await;
                let composed = x.linear(&w, Some(&b)).unwrap().relu().unwrap();
                let want = value_and_grads(&composed, &leaves).await;
                let what = format!("{rows}x{k}x{n} on {} {emulated:?}", device.name());
                // About half the outputs are cut to zero.
                let share = common::zero_share(&got[0]);
                assert!((0.2..0.8).contains(&share), "{what}: {share} zero");
                common::assert_parts_close(&what, "[out, dx, dw, db]", &got, &want, 1e-5);
            }
        }
        context.use_emulated_kernels(None);
    });
}

/// A ReLU's output `h` fed to a product: the product's store (or the pass summing its chunks
/// of K) zeroes h's gradient where h is 0, and the ReLU's own pass is skipped. Each case
/// against the same graph with `scale(1.0)` after the ReLU, which stops that (the ReLU then
/// takes its own pass), values and every gradient, on the CPU and both GPU kernel sets:
/// - a linear layer through ReLU into another, fused (`linear_relu`) and not (`relu`), 64 × 64
///   tiles, K split (an MLP's 128 × 512 over 512) and 128 × 128 tiles;
/// - h also added to the output (scaled): a gradient that did not come through the product, so
///   the ReLU's pass must not be skipped;
/// - h broadcast over a batch of products, whose gradient is a sum over the batch.
#[test]
fn a_relu_passes_its_gradient_through_the_next_products_store() {
    type Graph = fn(&Tensor, &[&Tensor], bool) -> Tensor;
    let fused: Graph = |x, p, stopped| {
        let h = x.linear_relu(p[0], Some(p[1])).unwrap();
        let h = if stopped { h.scale(1.0).unwrap() } else { h };
        h.linear(p[2], Some(p[3])).unwrap()
    };
    let unfused: Graph = |x, p, stopped| {
        let h = x.linear(p[0], Some(p[1])).unwrap().relu().unwrap();
        let h = if stopped { h.scale(1.0).unwrap() } else { h };
        h.linear(p[2], Some(p[3])).unwrap()
    };
    let also_added: Graph = |x, p, stopped| {
        let h = x.linear_relu(p[0], Some(p[1])).unwrap();
        let h = if stopped { h.scale(1.0).unwrap() } else { h };
        // The product's gradient reaches h first, then this one, which did not come through it.
        h.scale(2.0)
            .unwrap()
            .add(&h.linear(p[2], Some(p[3])).unwrap())
            .unwrap()
    };
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!()
        };
        let cases: [(Graph, [usize; 4]); 5] = [
            (fused, [6, 7, 13, 5]),
            (unfused, [6, 7, 13, 5]),
            (fused, [128, 64, 512, 512]),
            (also_added, [128, 64, 512, 512]),
            (fused, [8192, 24, 132, 136]),
        ];
        for (i, (graph, [rows, k, hidden, n])) in cases.into_iter().enumerate() {
            for (device, emulated) in &every_backend(&gpu) {
                context.use_emulated_kernels(*emulated);
                let x = leaf(&[rows, k], 1, device);
                let params = [
                    leaf(&[hidden, k], 2, device),
                    leaf(&[hidden], 3, device),
                    leaf(&[n, hidden], 4, device),
                    leaf(&[n], 5, device),
                ];
                let p: Vec<&Tensor> = params.iter().collect();
                let leaves = [&x, p[0], p[1], p[2], p[3]];
                let got = value_and_grads(&graph(&x, &p, false), &leaves).await;
                let want = value_and_grads(&graph(&x, &p, true), &leaves).await;
                let what = format!(
                    "case {i}, {rows}x{k}x{hidden}x{n} on {} {emulated:?}",
                    device.name()
                );
                let parts = "[out, dx, dw1, db1, dw2, db2]";
                common::assert_parts_close(&what, parts, &got, &want, 1e-5);
            }
        }
        // h [6, 9] times a batch of 3 matrices [9, 4]: h's gradient sums the batch's.
        for (device, emulated) in &every_backend(&gpu) {
            context.use_emulated_kernels(*emulated);
            let (x, w, b) = (
                leaf(&[6, 5], 6, device),
                leaf(&[9, 5], 7, device),
                leaf(&[9], 8, device),
            );
            let batch = leaf(&[3, 9, 4], 9, device);
            let leaves = [&x, &w, &b, &batch];
            let out = |stopped: bool| {
                let h = x.linear_relu(&w, Some(&b)).unwrap();
                let h = if stopped { h.scale(1.0).unwrap() } else { h };
                h.matmul(&batch).unwrap()
            };
            let got = value_and_grads(&out(false), &leaves).await;
            let want = value_and_grads(&out(true), &leaves).await;
            let what = format!("broadcast on {} {emulated:?}", device.name());
            common::assert_parts_close(&what, "[out, dx, dw, db, dbatch]", &got, &want, 1e-5);
        }
        context.use_emulated_kernels(None);
    });
}

#[test]
fn weight_and_bias_gradients_from_one_product_match_cpu() {
    run(async {
        // The weight's gradient and the bias's from one product whose tiles also sum the rows
        // of the output's gradient (ROW_SUMS): the linear test above covers the 64 × 64
        // tiles; here 16,384 rows in 32 chunks of 512 times 4 tiles of 128 × 128, dW's rows a
        // multiple of 4 long (stored a vec4 at a time) or not, the bias ragged at the tiles.
        let gpu = common::gpu().await;
        for shape in [(16384, 200, 130), (16384, 202, 129)] {
            common::linear::check_grads(&gpu, shape).await;
        }
    });
}

#[test]
fn matmul_broadcasts_batches() {
    run(async {
        // A 2-D right operand is folded into one big product; a batch of one broadcasts.
        check_op(
            "matmul fold",
            &[input(&[2, 35, 29], 3), input(&[29, 70], 4)],
            1e-4,
            |_, t| t[0].matmul(&t[1]),
        )
        .await;
        check_op(
            "matmul batch 1",
            &[input(&[1, 19, 23], 5), input(&[4, 23, 17], 6)],
            1e-4,
            |_, t| t[0].matmul(&t[1]),
        )
        .await;
        check_op(
            "matmul 2-D left",
            &[input(&[19, 23], 7), input(&[2, 3, 23, 17], 8)],
            1e-4,
            |_, t| t[0].matmul(&t[1]),
        )
        .await;
        // K split within each of 3 batches (13 chunks of one slice, the last one short).
        check_op(
            "matmul batched, K split",
            &[input(&[3, 9, 200], 9), input(&[3, 200, 11], 10)],
            1e-4,
            |_, t| t[0].matmul(&t[1]),
        )
        .await;
    });
}

#[test]
fn linear_adds_its_bias_as_it_stores() {
    run(async {
        // The weight's and the bias's gradients from one product (matmul_bias_grad.rs): 10 rows
        // in one chunk, 2048 in 32 of 64, 8192 in 32 of 256 (64 × 64 tiles here; 128 × 128
        // in the test below). Each matmul kernel: emulated-GPU, 64 × 64 tiles, and 128 × 128
        // tiles (64 × 2 tiles,
        // rows a multiple of 4 long or not, and C's rows a multiple of 4 long: C stored a vec4
        // at a time), columns ragged at the tile edges; and 64 × 64
        // tiles with K split (2 tiles, 300 = 18 chunks of 16 and one of 12) summed with the
        // bias and the residual, their partial products stored one value or a vec4 at a time.
        let shapes = [
            (5, 7, 9),
            (2048, 12, 70),
            (8192, 12, 131),
            (8192, 13, 130),
            (8192, 12, 132),
            (10, 300, 70),
            (10, 300, 72),
        ];
        for (rows, k, n) in shapes {
            let ins = [
                input(&[2, rows / 2, k], 1),
                input(&[n, k], 2),
                input(&[n], 3),
            ];
            check_op(&format!("linear {rows}x{k}x{n}"), &ins, 1e-4, |_, t| {
                t[0].linear(&t[1], Some(&t[2]))
            })
            .await;
            // With a residual added as C is stored, with and without a bias.
            let residual = input(&[2, rows / 2, n], 4);
            let ins = [ins[0].clone(), ins[1].clone(), ins[2].clone(), residual];
            check_op(
                &format!("linear + residual {rows}x{k}x{n}"),
                &ins,
                1e-4,
                |_, t| t[0].linear_residual(&t[1], Some(&t[2]), &t[3]),
            )
            .await;
            let ins = [ins[0].clone(), ins[1].clone(), ins[3].clone()];
            check_op(
                &format!("linear + residual, no bias {rows}x{k}x{n}"),
                &ins,
                1e-4,
                |_, t| t[0].linear_residual(&t[1], None, &t[2]),
            )
            .await;
        }
        let gpu = common::gpu().await;
        let x = Tensor::zeros(&[3, 4], &gpu).unwrap();
        let w = Tensor::zeros(&[5, 4], &gpu).unwrap();
        let err = x
            .linear(&w, Some(&Tensor::zeros(&[4], &gpu).unwrap()))
            .unwrap_err();
        assert!(err.to_string().contains("must be [5]"), "{err}");
        let err = x
            .linear_residual(&w, None, &Tensor::zeros(&[3, 4], &gpu).unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("the output's shape"), "{err}");
    });
}

#[test]
fn matmul_rejects_mismatched_inner_sizes() {
    run(async {
        let gpu = common::gpu().await;
        let a = Tensor::zeros(&[3, 4], &gpu).unwrap();
        let err = a
            .matmul(&Tensor::zeros(&[5, 2], &gpu).unwrap())
            .unwrap_err();
        assert!(err.to_string().contains("inner sizes 4 and 5"), "{err}");
    });
}
