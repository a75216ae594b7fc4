//! What the half-precision tests share (tests/half.rs, tests/half_operands.rs): the tests' GPU
//! with the f16 path it offers, f16's error bounds, random leaves, and a product put on f32
//! tiles as the timing would.

use super::uniform;
use std::rc::Rc;
use webgrad::bench::check::{relative_error, F16_ERROR_AT_MOST, F32_ERROR_AT_MOST};
use webgrad::gpu::{F16Products, Gpu, Precision, ProductVariant, Tiles};
use webgrad::ops::ProductPath;
use webgrad::{Device, Tensor};

/// `got` within f16's error of `want` relative to its size, and farther than f32's would be.
pub fn assert_f16(what: &str, got: &[f64], want: &[f64]) {
    let error = relative_error(got, want);
    assert!(
        error <= F16_ERROR_AT_MOST,
        "{what}: relative error {error:e}"
    );
    assert!(
        error > F32_ERROR_AT_MOST,
        "{what}: error {error:e} is f32's"
    );
}

/// A tensor of `shape` on `d` that needs a gradient, its values uniform in ±`size` from `seed`.
pub fn random_leaf(d: &Device, shape: &[usize], size: f64, seed: u64) -> Tensor {
    let values = uniform(shape.iter().product(), -size, size, seed);
    Tensor::from_f64(values, shape, d).unwrap().with_grad()
}

/// A linear layer's input [rows, k], weight [n, k] and bias [n] on `d`, leaves uniform in
/// ±`size` from seeds `seed`, `seed + 1` and `seed + 2`.
pub fn linear_leaves(
    d: &Device,
    (rows, k, n): (usize, usize, usize),
    size: f64,
    seed: u64,
) -> [Tensor; 3] {
    [
        random_leaf(d, &[rows, k], size, seed),
        random_leaf(d, &[n, k], size, seed + 1),
        random_leaf(d, &[n], size, seed + 2),
    ]
}

/// Each of `got`'s tensors within `bound` of `want`'s, relative to its size: part i, named
/// `parts[i]` after `what` where it is not.
pub async fn assert_parts_within<P: AsRef<str>>(
    what: &str,
    parts: &[P],
    (got, want): (&[Tensor], &[Tensor]),
    bound: f64,
) {
    for (i, part) in parts.iter().enumerate() {
        let got = got[i].to_vec_f64().await.unwrap();
        let want = want[i].to_vec_f64().await.unwrap();
        let error = relative_error(&got, &want);
        assert!(error <= bound, "{what}: {}: {error:e}", part.as_ref());
    }
}

/// `out`, then the gradients of `leaves` from `loss`.
pub fn with_grads(out: Tensor, loss: &Tensor, leaves: &[&Tensor]) -> Vec<Tensor> {
    let grads = loss.backward().unwrap();
    let mut all = vec![out];
    all.extend(leaves.iter().map(|t| grads.get(t).unwrap().clone()));
    all
}

/// The tests' GPU, as a device and itself, and the f16 path it offers (`f16_path`); None where
/// it offers none.
pub async fn gpu_with_f16() -> Option<(Device, Rc<Gpu>, ProductPath)> {
    let gpu = super::gpu().await;
    let Device::Gpu(context) = &gpu else {
        unreachable!("common::gpu gives a GPU")
    };
    let context = context.clone();
    let path = f16_path(&context)?;
    Some((gpu, context, path))
}

/// The f16 path this GPU offers, with auto's and f16's choices asserted: the matrix units
/// (auto takes them), the f16 arithmetic (f16 takes it, auto keeps f32 and says f16 would), or
/// none (f16 refused with the reason).
pub fn f16_path(context: &Gpu) -> Option<ProductPath> {
    let auto = context.set_precision(Precision::Auto).unwrap();
    if context.matrix_units().is_some() {
        assert!(auto.f16(), "{auto:?}");
        return Some(ProductPath::MatrixUnits);
    }
    assert!(
        !auto.f16() && context.tuning().f16_products.is_none(),
        "{auto:?}"
    );
    assert!(auto.sentence().starts_with("Products in f32 (auto)"));
    if !context.shader_f16() {
        let refused = context
            .set_precision(Precision::F16)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("neither f16 matrix units nor"),
            "{refused}"
        );
        return None;
    }
    assert!(auto
        .why
        .contains("f16, asked for, runs on its f16 arithmetic"));
    let f16 = context.set_precision(Precision::F16).unwrap();
    assert_eq!(f16.products, Some(F16Products::Arithmetic));
    Some(ProductPath::F16Arithmetic)
}

/// Runs the products on the kernels for real GPUs (the emulated GPUs' products have no variants
/// to choose) and has the timing put the noted product of (m, n, k, B transposed) on small f32
/// tiles, as it does where they measured faster; the caller returns to the GPU's own kernels
/// (`use_emulated_kernels(None)`).
pub fn choose_small_tiles(context: &Gpu, (m, n, k, b_transposed): (usize, usize, usize, bool)) {
    context.use_emulated_kernels(Some(false));
    let noted = context.product_variants().take_noted();
    let shape = noted
        .iter()
        .find(|s| (s.m, s.n, s.k, s.b_transposed) == (m, n, k, b_transposed));
    let shape = *shape.expect("the product's shape was noted");
    let small = ProductVariant {
        tiles: Tiles::Small,
        parts: 1,
    };
    context.product_variants().choose(shape, small);
}
