//! The gradients of a linear layer on the GPU's kernels for real GPUs against the CPU's
//! (tests/ops_linear_algebra.rs natively, tests/browser.rs in the browser).

use webgrad::{Device, Tensor};

/// The gradients of x, the weight and the bias of `x.linear(w, b)` for loss = Σ out · r with
/// a fixed random r, on `device`.
pub async fn grads(device: &Device, (rows, k, n): (usize, usize, usize)) -> Vec<Vec<f64>> {
    let leaf = |shape: &[usize], seed| {
        let values = super::uniform(shape.iter().product(), -1.0, 1.0, seed);
        Tensor::from_f64(values, shape, device).unwrap().with_grad()
    };
    let (x, w, b) = (leaf(&[rows, k], 1), leaf(&[n, k], 2), leaf(&[n], 3));
    let r = Tensor::from_f64(super::uniform(rows * n, -1.0, 1.0, 4), &[rows, n], device);
    let out = x.linear(&w, Some(&b)).unwrap();
    let grads = out
        .mul(&r.unwrap())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    let mut all = Vec::new();
    for t in [&x, &w, &b] {
        all.push(grads.get(t).unwrap().to_vec_f64().await.unwrap());
    }
    all
}

/// Checks the gradients of x, the weight and the bias of a linear layer of `rows` × `k` into
/// `n` on `gpu`'s kernels for real GPUs against the CPU's.
pub async fn check_grads(gpu: &Device, (rows, k, n): (usize, usize, usize)) {
    let Device::Gpu(context) = gpu else {
        panic!("expected a GPU device")
    };
    let want = grads(&Device::Cpu, (rows, k, n)).await;
    context.use_emulated_kernels(Some(false));
    let got = grads(gpu, (rows, k, n)).await;
    context.use_emulated_kernels(None);
    for (i, what) in ["x", "weight", "bias"].iter().enumerate() {
        let name = format!("linear {rows}x{k}x{n}: gradient of the {what}");
        super::assert_close(&name, &got[i], &want[i], 1e-3);
    }
}
