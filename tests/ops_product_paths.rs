//! Which kernel a product takes, asserted: the large tiles where there are enough of them (and
//! K split where the GPU's size says so), and Chrome's kernel variants (`Compiler::Tint`) run
//! natively; each against the CPU. The planner's choices themselves are src/ops/matmul/plan.rs's
//! table test.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, check_op, input, run, stored, uniform};
use webgrad::gpu::{Compiler, Tuning};
use webgrad::ops::ProductPath;
use webgrad::{Device, Tensor};

#[test]
fn matmul_with_many_tiles_uses_the_large_tile_kernel_correctly() {
    run(async {
        // 32 × 2 × 2 tiles of 128 reach the large-tile kernel; 129 and 131 leave ragged edges
        // and odd rows (values fetched one by one); 132 and 136 leave ragged edges with rows a
        // multiple of 4 long (fetched as vec4s, in every layout), or one operand's rows so and
        // the other's not; depth 44 is two slices of 16 and a ragged 12.
        let cases = [
            (129, 131, false, false),
            (129, 131, true, true),
            (132, 136, false, false),
            (132, 136, true, false),
            (132, 136, false, true),
            (132, 136, true, true),
            (129, 136, true, false),
            (132, 131, false, false),
        ];
        for (m, n, ta, tb) in cases {
            let a = input(&stored(m, 44, ta, &[32]), 1);
            let b = input(&stored(44, n, tb, &[32]), 2);
            check_op(
                &format!("large matmul {m}x44x{n} ta={ta} tb={tb}"),
                &[a, b],
                1e-4,
                |_, t| t[0].matmul_t(&t[1], ta, tb),
            )
            .await;
        }
        // 8 batches of 2 × 2 tiles over K = 520 on a GPU measured to run 132 large tiles at
        // once: too few to fill it, so K is split in two chunks (272 and 248) whose partial
        // products are summed after.
        let Device::Gpu(gpu) = common::gpu().await else {
            unreachable!("common::gpu gives a GPU")
        };
        let opened = gpu.tuning();
        gpu.set_tuning(Tuning {
            tiles_at_once: Some(132),
            ..opened
        });
        let sums_before = gpu.dispatches_of("matmul_split_sum");
        check_op(
            "large matmul, K split",
            &[input(&[8, 132, 520], 3), input(&[8, 520, 136], 4)],
            1e-4,
            |_, t| t[0].matmul(&t[1]),
        )
        .await;
        gpu.set_tuning(opened);
        // Each took the large-tile kernel (the split one too), where the device holds its
        // workgroup memory.
        let large = gpu.dispatches_of(ProductPath::LargeTiles.family());
        if gpu.limits().max_compute_workgroup_storage_size >= 20 << 10 {
            assert!(
                large > cases.len() as u64,
                "{large} dispatches of the large-tile kernel"
            );
            assert!(
                gpu.dispatches_of("matmul_split_sum") > sums_before,
                "K was not split"
            );
        }
    });
}

/// Chrome's kernel variants (`Compiler::Tint`: operands staged as blocks transposed in
/// registers, no prefetch, branchless loads where A is transposed, few rows or columns on
/// small tiles) run natively on the real-GPU kernels and match the CPU: in the browser's own
/// tests they never run, its software GPU taking the emulated kernels.
#[test]
fn the_browsers_product_variants_match_cpu() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let opened = context.tuning();
        context.set_tuning(opened.with_compiler(Compiler::Tint));
        context.use_emulated_kernels(Some(false));
        let large_before = context.dispatches_of(ProductPath::LargeTiles.family());
        // Depths over 64 (the browser keeps shallower products on small tiles), ragged at the
        // slices of 16; the last, of 64 rows, stays on small tiles with K split.
        for (m, k, n, ta, tb) in [
            (1024, 72, 2048, false, false),
            (1032, 84, 2044, true, false),
            (1028, 100, 2052, false, true),
            (1024, 68, 2048, true, true),
            (64, 520, 136, false, false),
        ] {
            let product = |d: &Device| {
                let a = Tensor::from_f64(uniform(m * k, -1.0, 1.0, 1), &stored(m, k, ta, &[]), d)?;
                let b = Tensor::from_f64(uniform(k * n, -1.0, 1.0, 2), &stored(k, n, tb, &[]), d)?;
                a.matmul_t(&b, ta, tb)
            };
            let got = product(&gpu).unwrap().to_vec_f64().await.unwrap();
            let want = product(&Device::Cpu).unwrap().to_vec_f64().await.unwrap();
            let name = format!("browser tuning, {m}x{k}x{n} ta={ta} tb={tb}");
            common::assert_close(&name, &got, &want, 1e-4);
        }
        // A linear layer's gradients: its forward and input gradient on the large tiles.
        common::linear::check_grads(&gpu, (8192, 136, 132)).await;
        context.use_emulated_kernels(Some(false));
        let large = context.dispatches_of(ProductPath::LargeTiles.family()) - large_before;
        context.set_tuning(opened);
        if context.limits().max_compute_workgroup_storage_size >= 20 << 10 {
            assert!(large >= 6, "{large} products on the large tiles");
        }
    });
}

/// A product whose K is longer than 65,535 (a table larger than a binding, read in windows of
/// half a million rows): llvmpipe ends any shader loop there, so the emulated GPUs' kernel
/// splits K into parts; both kernel sets give the CPU's product.
#[test]
fn a_product_over_a_long_k_sums_all_of_it() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let k = 65_540;
        let (a, b) = (uniform(20 * k, -1.0, 1.0, 1), uniform(k * 64, -1.0, 1.0, 2));
        let product = |d: &Device| {
            let a = Tensor::from_f64(a.clone(), &[20, k], d).unwrap();
            a.matmul(&Tensor::from_f64(b.clone(), &[k, 64], d).unwrap())
                .unwrap()
        };
        let want = product(&Device::Cpu).to_vec_f64().await.unwrap();
        for emulated in [false, true] {
            context.use_emulated_kernels(Some(emulated));
            let got = product(&gpu).to_vec_f64().await.unwrap();
            assert_close(&format!("emulated kernels {emulated}"), &got, &want, 1e-4);
        }
        context.use_emulated_kernels(None);
    });
}
