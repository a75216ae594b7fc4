//! The products of the precision a bench runs in, checked against the CPU's on the device being
//! measured before anything is timed: a kernel that is fast and wrong on some GPU (a dialect's
//! matrix layout misread, a subgroup taking another's block) would otherwise give a fine line.

use crate::{Device, Error, Gpu, Result, Tensor};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::rc::Rc;

/// f16 keeps 11 bits: operands rounded to it give sums some 1e-3 off relative to their size;
/// f32's products are a thousand times closer. A product farther off than its precision's bound
/// is wrong.
pub const F16_ERROR_AT_MOST: f64 = 1e-2;
pub const F32_ERROR_AT_MOST: f64 = 2e-5;

/// Shapes (m, k, n, A transposed, B transposed) with ragged edges at 128-wide tiles and 32- and
/// 64-deep slices, in every layout, rows a multiple of 4 long (vec4 fetches) or not; each of 2^23
/// multiply-adds or more, as the matrix units take (src/ops/matmul/plan.rs).
const SHAPES: [(usize, usize, usize, bool, bool); 4] = [
    (200, 330, 136, false, false),
    (260, 136, 260, true, false),
    (260, 100, 332, false, true),
    (131, 333, 193, true, true),
];

/// The largest error of `gpu`'s products over SHAPES, relative to the mean magnitude of the
/// CPU's (f64 sums of the same f32 operands).
pub async fn product_error(gpu: &Rc<Gpu>) -> Result<f64> {
    let mut most: f64 = 0.0;
    for (i, &(m, k, n, ta, tb)) in (0u64..).zip(SHAPES.iter()) {
        let product = |d: &Device| {
            let a = Tensor::from_f64(values(m * k, 2 * i), &stored(m, k, ta), d)?;
            let b = Tensor::from_f64(values(k * n, 2 * i + 1), &stored(k, n, tb), d)?;
            a.matmul_t(&b, ta, tb)
        };
        let got = product(&Device::Gpu(gpu.clone()))?.to_vec_f64().await?;
        let want = product(&Device::Cpu)?.to_vec_f64().await?;
        most = most.max(relative_error(&got, &want));
    }
    Ok(most)
}

/// The bench's line for the check, or an error naming how far off the products are.
pub async fn products_line(gpu: &Rc<Gpu>) -> Result<String> {
    let (precision, bound) = match gpu.tuning().f16_products {
        Some(_) => ("f16", F16_ERROR_AT_MOST),
        None => ("f32", F32_ERROR_AT_MOST),
    };
    let error = product_error(gpu).await?;
    let line = format!(
        "check: {precision} products {error:.1e} off the CPU's relative to their size (at most {bound:.0e})"
    );
    match error <= bound {
        true => Ok(line),
        false => Err(Error::Invalid {
            op: "bench",
            why: format!("{line}: this GPU's {precision} products are wrong"),
        }),
    }
}

/// The shape of an operand of `rows` × `cols` as stored: transposed, `cols` × `rows`.
fn stored(rows: usize, cols: usize, transposed: bool) -> [usize; 2] {
    match transposed {
        true => [cols, rows],
        false => [rows, cols],
    }
}

/// `n` values uniform in [-1, 1), from `seed`.
pub(super) fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-1.0..1.0)).collect()
}

/// The largest difference relative to the mean magnitude of what was wanted; infinite where a
/// value is not finite or the lengths differ.
pub fn relative_error(got: &[f64], want: &[f64]) -> f64 {
    if got.len() != want.len() || !got.iter().all(|v| v.is_finite()) {
        return f64::INFINITY;
    }
    let scale = want.iter().map(|v| v.abs()).sum::<f64>() / want.len() as f64;
    let most = got
        .iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs())
        .fold(0.0, f64::max);
    most / scale
}
