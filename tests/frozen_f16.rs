//! Frozen weights held in f16 (src/tensor/half.rs): their values round trip as f16's; products
//! read them as their second operand on each kernel set (the emulated GPUs', the small and the
//! large tiles) as the CPU multiplies the same rounded values, gradients through them included.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, every_backend, run, stored, uniform, value_and_grads};
use half::f16;
use webgrad::ops::ProductPath;
use webgrad::{DType, Device, Tensor};

/// `values` rounded to the nearest f16, in f64.
fn rounded(values: &[f64]) -> Vec<f64> {
    values.iter().map(|&v| f16::from_f64(v).to_f64()).collect()
}

#[test]
fn f16_values_round_trip_and_are_assigned_and_widened_as_f16s() {
    run(async {
        let gpu = common::gpu().await;
        // Sizes that end inside a group of 4 halves, and one that ends on it.
        for n in [1, 7, 10, 16] {
            let values = uniform(n, -70_000.0, 70_000.0, n as u64);
            let next = uniform(n, -2.0, 2.0, n as u64 + 1);
            for device in [Device::Cpu, gpu.clone()] {
                let t = Tensor::from_f64_as_f16(values.clone(), &[n], &device).unwrap();
                assert_eq!(t.dtype(), DType::F16);
                // Past f16's 65,504 the values become infinities, as f16 has it.
                let want = rounded(&values);
                assert_eq!(t.to_vec_f64().await.unwrap(), want, "n = {n}");
                let wide = t.to_f32().unwrap();
                assert_eq!(wide.dtype(), DType::F32);
                assert_eq!(wide.to_vec_f64().await.unwrap(), want, "widened, n = {n}");
                let next32: Vec<f32> = next.iter().map(|&v| v as f32).collect();
                t.assign(&next32).unwrap();
                let want = rounded(&next32.iter().map(|&v| v as f64).collect::<Vec<_>>());
                assert_eq!(t.to_vec_f64().await.unwrap(), want, "assigned, n = {n}");
                let zeros = Tensor::zeros_f16(&[n], &device).unwrap();
                assert_eq!(zeros.to_vec_f64().await.unwrap(), vec![0.0; n]);
            }
        }
    });
}

#[test]
fn products_read_an_f16_second_operand_as_the_cpu_multiplies_its_rounded_values() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let large_before = context.dispatches_of(ProductPath::LargeTiles.family());
        // A's rows folded into 4,224 × 520 of C (165 tiles of 128: the large tiles), and ragged
        // small products; B stored [K, N] or [N, K], its rows a multiple of 4 long (fetched as
        // vec4s) or not.
        for (batch, m, k, n, tb) in [
            (32, 132, 44, 520, true),
            (32, 132, 44, 520, false),
            (1, 129, 44, 131, false),
            (1, 129, 44, 131, true),
            (2, 60, 36, 136, true),
        ] {
            let a_values = uniform(batch * m * k, -1.0, 1.0, 1);
            let b_values = uniform(k * n, -1.0, 1.0, 2);
            let b_shape = stored(k, n, tb, &[]);
            let want = {
                let a = Tensor::from_f64(a_values.clone(), &[batch, m, k], &Device::Cpu).unwrap();
                let b = Tensor::from_f64(rounded(&b_values), &b_shape, &Device::Cpu).unwrap();
                a.matmul_t(&b, false, tb).unwrap().to_vec_f64().await.unwrap()
            };
            for (device, emulated) in every_backend(&gpu) {
                context.use_emulated_kernels(emulated);
                let a = Tensor::from_f64(a_values.clone(), &[batch, m, k], &device).unwrap();
                let b = Tensor::from_f64_as_f16(b_values.clone(), &b_shape, &device).unwrap();
                let got = a.matmul_t(&b, false, tb).unwrap().to_vec_f64().await.unwrap();
                let name = format!("{batch}x{m}x{k}x{n} tb={tb}, emulated kernels {emulated:?}");
                assert_close(&name, &got, &want, 1e-4);
            }
        }
        context.use_emulated_kernels(None);
        if context.limits().max_compute_workgroup_storage_size >= 20 << 10 {
            let large = context.dispatches_of(ProductPath::LargeTiles.family()) - large_before;
            assert!(large >= 2, "{large} products on the large tiles");
        }
    });
}

#[test]
fn a_linear_layer_over_an_f16_weight_passes_its_input_the_gradient_of_the_rounded_weight() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(context) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let (rows, inputs, outputs) = (70, 52, 36);
        let w_values = uniform(outputs * inputs, -0.5, 0.5, 3);
        let bias = uniform(outputs, -0.5, 0.5, 4);
        let values = |device: &Device, w: Tensor| {
            let x = common::leaf(&[rows, inputs], 5, device);
            let bias = Tensor::from_f64(bias.clone(), &[outputs], device).unwrap();
            let out = x.linear(&w, Some(&bias)).unwrap();
            (out, x)
        };
        let (out, x) = values(
            &Device::Cpu,
            Tensor::from_f64(rounded(&w_values), &[outputs, inputs], &Device::Cpu).unwrap(),
        );
        let want = value_and_grads(&out, &[&x]).await;
        for (device, emulated) in every_backend(&gpu) {
            context.use_emulated_kernels(emulated);
            let w = Tensor::from_f64_as_f16(w_values.clone(), &[outputs, inputs], &device);
            let (out, x) = values(&device, w.unwrap());
            let got = value_and_grads(&out, &[&x]).await;
            let name = format!("linear over f16, emulated kernels {emulated:?}");
            common::assert_parts_close(&name, "value, input's gradient", &got, &want, 1e-4);
        }
        context.use_emulated_kernels(None);
        // As A, an f16 tensor is refused with the reason.
        let w = Tensor::from_f64_as_f16(w_values, &[outputs, inputs], &gpu).unwrap();
        let err = w.matmul_t(&w, false, true).unwrap_err().to_string();
        assert!(err.contains("f16"), "{err}");
    });
}
