//! Convolution and max pooling: GPU against the CPU reference, gradients against finite
//! differences, and the ReLU they may apply or pass through checked against the same graphs
//! without it.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{check_op, every_backend, input, leaf, run, value_and_grads};
use webgrad::{Device, Tensor};

/// A convolution's input [2, 3, 9, 11], weight (5 channels of 3 × 3) and bias on `device`,
/// each wanting its gradient.
fn conv_leaves(device: &Device) -> [Tensor; 3] {
    [
        leaf(&[2, 3, 9, 11], 1, device),
        leaf(&[5, 3, 3, 3], 2, device),
        leaf(&[5], 3, device),
    ]
}

#[test]
fn conv2d_matches_cpu() {
    run(async {
        let x = || input(&[2, 3, 9, 11], 1);
        let w = || input(&[5, 3, 3, 3], 2);
        check_op("conv2d pad 1", &[x(), w(), input(&[5], 3)], 1e-4, |_, t| {
            t[0].conv2d(&t[1], Some(&t[2]), 1, 1)
        })
        .await;
        check_op("conv2d stride 2", &[x(), w()], 1e-4, |_, t| {
            t[0].conv2d(&t[1], None, 2, 0)
        })
        .await;
        check_op(
            "conv2d 5x5 stride 2 pad 2",
            &[x(), input(&[4, 3, 5, 5], 4)],
            1e-4,
            |_, t| t[0].conv2d(&t[1], None, 2, 2),
        )
        .await;
    });
}

/// `conv2d_relu`, the ReLU in the convolution's product store, gives what `conv2d().relu()`
/// gives, values and the gradients of input, weight and bias, on the CPU and with both GPU
/// kernel sets. check_op alone would not see a ReLU left out of both forward and backward.
#[test]
fn conv2d_relu_is_conv2d_then_relu() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!()
        };
        for (device, emulated) in &every_backend(&gpu) {
            context.use_emulated_kernels(*emulated);
            let [x, w, b] = conv_leaves(device);
            let leaves = [&x, &w, &b];
            let fused = x.conv2d_relu(&w, Some(&b), 1, 1).unwrap();
            let got = value_and_grads(&fused, &leaves).await;
            let composed = x.conv2d(&w, Some(&b), 1, 1).unwrap().relu().unwrap();
            let want = value_and_grads(&composed, &leaves).await;
            let what = format!("conv2d_relu on {} {emulated:?}", device.name());
            let share = common::zero_share(&got[0]);
            assert!((0.2..0.8).contains(&share), "{what}: {share} zero");
            common::assert_parts_close(&what, "[out, dx, dw, db]", &got, &want, 1e-5);
        }
        context.use_emulated_kernels(None);
    });
}

/// Max pooling over a ReLU's output zeroes the gradient where that output is 0, and the ReLU's
/// pass is skipped: a convolution through ReLU (`conv2d_relu`) and a ReLU of its own, each
/// against the same graph with `scale(1.0)` between, which stops that, on the CPU and both
/// GPU kernel sets.
#[test]
fn maxpool_over_a_relu_passes_its_gradient_through_it() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!()
        };
        for (device, emulated) in &every_backend(&gpu) {
            context.use_emulated_kernels(*emulated);
            let [x, w, b] = conv_leaves(device);
            let leaves = [&x, &w, &b];
            let stop = |h: Tensor, stopped: bool| if stopped { h.scale(1.0).unwrap() } else { h };
            let fused = |stopped| {
                let h = x.conv2d_relu(&w, Some(&b), 1, 1).unwrap();
                stop(h, stopped).maxpool2d(2, 2).unwrap()
            };
            let unfused = |stopped| {
                let h = x.conv2d(&w, Some(&b), 1, 1).unwrap().relu().unwrap();
                stop(h, stopped).maxpool2d(2, 2).unwrap()
            };
            for (name, graph) in [
                ("conv2d_relu", &fused as &dyn Fn(bool) -> Tensor),
                ("relu", &unfused),
            ] {
                let got = value_and_grads(&graph(false), &leaves).await;
                let want = value_and_grads(&graph(true), &leaves).await;
                let what = format!("{name}, maxpool on {} {emulated:?}", device.name());
                common::assert_parts_close(&what, "[out, dx, dw, db]", &got, &want, 1e-5);
            }
        }
        context.use_emulated_kernels(None);
    });
}

#[test]
fn maxpool2d_matches_cpu() {
    run(async {
        check_op("maxpool 2/2", &[input(&[2, 3, 9, 11], 1)], 1e-6, |_, t| {
            t[0].maxpool2d(2, 2)
        })
        .await;
        check_op(
            "maxpool 3/2 overlapping",
            &[input(&[2, 3, 9, 11], 2)],
            1e-6,
            |_, t| t[0].maxpool2d(3, 2),
        )
        .await;
    });
}
