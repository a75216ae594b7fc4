//! The gradients of a linear layer on one device, for comparing the GPU's with the CPU's
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
