//! Frozen weights held in f16 (src/tensor/half.rs) read by products, checked natively
//! (tests/frozen_f16.rs) and in the browser (tests/browser.rs), whose compiler is Tint: on
//! each kernel set, as the CPU multiplies the same values rounded to f16.

use super::{assert_close, assert_parts_close, every_backend, stored, uniform, value_and_grads};
use half::f16;
use webgrad::ops::ProductPath;
use webgrad::{Device, Tensor};

/// `values` as an f16 tensor holds them: rounded to f32, then to f16, in f64.
pub fn rounded(values: &[f64]) -> Vec<f64> {
    values
        .iter()
        .map(|&v| f16::from_f32(v as f32).to_f64())
        .collect()
}

/// Products whose second operand is f16, on each kernel set (the emulated GPUs', the small and
/// the large tiles), against the CPU's over the rounded values.
pub async fn products_match_the_cpu(gpu: &Device) {
    let Device::Gpu(context) = gpu else {
        unreachable!("common::gpu gives a GPU")
    };
    let large_before = context.dispatches_of(ProductPath::LargeTiles.family());
    // A's rows folded into 4,224 × 520 of C (165 tiles of 128, 68 deep: the large tiles, in
    // the browser too), and ragged small products; B stored [K, N] or [N, K], its rows a
    // multiple of 4 long (fetched as vec4s) or not.
    for (batch, m, k, n, tb) in [
        (32, 132, 68, 520, true),
        (32, 132, 68, 520, false),
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
            a.matmul_t(&b, false, tb)
                .unwrap()
                .to_vec_f64()
                .await
                .unwrap()
        };
        for (device, emulated) in every_backend(gpu) {
            context.use_emulated_kernels(emulated);
            let a = Tensor::from_f64(a_values.clone(), &[batch, m, k], &device).unwrap();
            let b = Tensor::from_f64_as_f16(b_values.clone(), &b_shape, &device).unwrap();
            let got = a
                .matmul_t(&b, false, tb)
                .unwrap()
                .to_vec_f64()
                .await
                .unwrap();
            let name = format!("{batch}x{m}x{k}x{n} tb={tb}, emulated kernels {emulated:?}");
            assert_close(&name, &got, &want, 1e-4);
        }
    }
    context.use_emulated_kernels(None);
    if context.limits().max_compute_workgroup_storage_size >= 20 << 10 {
        let large = context.dispatches_of(ProductPath::LargeTiles.family()) - large_before;
        assert!(large >= 2, "{large} products on the large tiles");
    }
}

/// A linear layer over an f16 weight: its value and its input's gradient, on each kernel set,
/// against the CPU's over the rounded weight; an f16 tensor as a product's first operand too
/// (a GELU's output in an f16 run, widened where its product runs on f32 kernels).
pub async fn linear_layers_match_the_cpu(gpu: &Device) {
    let Device::Gpu(context) = gpu else {
        unreachable!("common::gpu gives a GPU")
    };
    let (rows, inputs, outputs) = (70, 52, 36);
    let w_values = uniform(outputs * inputs, -0.5, 0.5, 3);
    let bias = uniform(outputs, -0.5, 0.5, 4);
    let values = |device: &Device, w: Tensor| {
        let x = super::leaf(&[rows, inputs], 5, device);
        let bias = Tensor::from_f64(bias.clone(), &[outputs], device).unwrap();
        let out = x.linear(&w, Some(&bias)).unwrap();
        (out, x)
    };
    let (out, x) = values(
        &Device::Cpu,
        Tensor::from_f64(rounded(&w_values), &[outputs, inputs], &Device::Cpu).unwrap(),
    );
    let want = value_and_grads(&out, &[&x]).await;
    for (device, emulated) in every_backend(gpu) {
        context.use_emulated_kernels(emulated);
        let w = Tensor::from_f64_as_f16(w_values.clone(), &[outputs, inputs], &device);
        let (out, x) = values(&device, w.unwrap());
        let got = value_and_grads(&out, &[&x]).await;
        let name = format!("linear over f16, emulated kernels {emulated:?}");
        assert_parts_close(&name, "value, input's gradient", &got, &want, 1e-4);
    }
    context.use_emulated_kernels(None);
    // As A too: the rounded values, widened.
    let square = |device: &Device| {
        let w = Tensor::from_f64_as_f16(w_values.clone(), &[outputs, inputs], device).unwrap();
        w.matmul_t(&w, false, true).unwrap()
    };
    let got = square(gpu).to_vec_f64().await.unwrap();
    let want = square(&Device::Cpu).to_vec_f64().await.unwrap();
    assert_close("an f16 tensor as A", &got, &want, 1e-4);
}

/// An embedding's gather from an f16 table (a frozen GPT-2's), on the GPU exactly as on the
/// CPU: the rounded values, widened.
pub async fn embeddings_match_the_cpu(gpu: &Device) {
    let (rows, width) = (50, 12);
    let values = uniform(rows * width, -1.0, 1.0, 6);
    let picked: Vec<u32> = vec![0, 49, 7, 7, 23, 1];
    let mut got = Vec::new();
    for device in [Device::Cpu, gpu.clone()] {
        let table = Tensor::from_f64_as_f16(values.clone(), &[rows, width], &device).unwrap();
        let idx = Tensor::from_u32(picked.clone(), &[2, 3], &device).unwrap();
        let gathered = table.embedding(&idx).unwrap();
        assert_eq!(gathered.shape(), [2, 3, width]);
        got.push(gathered.to_vec_f64().await.unwrap());
    }
    let rounded = rounded(&values);
    let want: Vec<f64> = picked
        .iter()
        .flat_map(|&r| rounded[r as usize * width..(r as usize + 1) * width].to_vec())
        .collect();
    assert_eq!(got[0], want, "the CPU's rows");
    assert_eq!(got[1], want, "the GPU's rows");
}
