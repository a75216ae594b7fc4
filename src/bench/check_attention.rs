//! Packed causal attention checked against the CPU's on the device being measured, on each path
//! open to it in the bench's precision, before anything is timed, as check.rs checks the
//! products: the kernels on the matrix units in Chrome's dialect run on no GPU in CI (the
//! browser tests' SwiftShader offers no subgroup matrices), so the page's bench is where a
//! misread layout in them would show.

use super::check::{relative_error, values, F16_ERROR_AT_MOST, F32_ERROR_AT_MOST};
use crate::autograd::with_grad;
use crate::gpu::{AttentionPath, AttentionShape};
use crate::ops::attention_candidates;
use crate::{Device, Error, Gpu, Result, Tensor};
use std::rc::Rc;

/// 2 sequences of 256 positions, 3 heads of 64: four blocks of 64 positions, so that the
/// kernels walk blocks fetched ahead past the first, and as many as the path through the
/// scores takes (scores::SCORES_FROM).
const BATCH: usize = 2;
const T: usize = 256;
const HEADS: usize = 3;
const C: usize = 192;

/// How far one path's attention is from the CPU's, relative to the size of each: the output,
/// and the worst of the gradients of q, k and v; with its packed input and the output's
/// gradient in f16 (`halves`, the matrix units' path only, as a GPT's products store them
/// there) or f32.
#[derive(Clone, Copy, Debug)]
pub struct AttentionError {
    pub path: AttentionPath,
    pub halves: bool,
    pub output: f64,
    pub gradients: f64,
}

/// The bounds of the output's error and the gradients' on `path` in a run with f16 products
/// or without. The matrix units' path in f16 twice the products' bound and four times it for
/// the gradients, whose probabilities and their gradients are
/// rounded to f16 before the products that take them (on an H200, 192 positions, the matrix
/// units' kernels natively 5.7e-3 and 1.3e-2, in Chrome 6.3e-3 and 1.3e-2; 256 positions in
/// Chrome 7.1e-3 and 1.5e-2, and natively 2.1e-2 for the gradients stored in f16 from f16
/// inputs); the others, f32 in either run (attention's products through
/// the scores stay f32), the products' f32 bound and ten times it for the gradients, which sum
/// more terms (lavapipe's row kernels 2.4e-6 and 3.1e-5, an H200's scores 2.0e-6 and 2.9e-5).
/// A leaked mask, a missed block or a misread layout is off by 0.1 or more.
pub fn attention_bounds(path: AttentionPath, f16: bool) -> (f64, f64) {
    match f16 && path == AttentionPath::Matrix {
        true => (2.0 * F16_ERROR_AT_MOST, 4.0 * F16_ERROR_AT_MOST),
        false => (F32_ERROR_AT_MOST, 10.0 * F32_ERROR_AT_MOST),
    }
}

/// Whether `e` lies within its path's bounds.
pub fn within_bounds(e: &AttentionError, f16: bool) -> bool {
    let (output, gradients) = attention_bounds(e.path, f16);
    e.output <= output && e.gradients <= gradients
}

/// The error of each path open to attention of the checked shape on `gpu`, in its precision.
pub async fn attention_errors(gpu: &Rc<Gpu>) -> Result<Vec<AttentionError>> {
    let shape = AttentionShape {
        batch: BATCH,
        t: T,
        heads: HEADS,
        d: C / HEADS,
        f16: gpu.tuning().f16_products.is_some(),
    };
    let input = values(BATCH * T * 3 * C, 7);
    let cotangent = values(BATCH * T * C, 8);
    let want = run(&Device::Cpu, None, (&input, &cotangent, false)).await?;
    let mut errors = Vec::new();
    let device = Device::Gpu(gpu.clone());
    for path in attention_candidates(gpu, shape) {
        // The matrix units' kernels read f32 or f16 inputs; the others f32.
        let precisions: &[bool] = match path {
            AttentionPath::Matrix => &[false, true],
            _ => &[false],
        };
        for &halves in precisions {
            let inputs = (&input[..], &cotangent[..], halves);
            let got = run(&device, Some(path), inputs).await?;
            let gradients = (0..3)
                .map(|i| relative_error(&part(&got[1], i), &part(&want[1], i)))
                .fold(0.0, f64::max);
            errors.push(AttentionError {
                path,
                halves,
                output: relative_error(&got[0], &want[0]),
                gradients,
            });
        }
    }
    Ok(errors)
}

/// The bench's line for the check, or an error naming the path that is off.
pub async fn attention_line(gpu: &Rc<Gpu>) -> Result<String> {
    let f16 = gpu.tuning().f16_products.is_some();
    let errors = attention_errors(gpu).await?;
    let each: Vec<String> = errors
        .iter()
        .map(|e| {
            let (output, gradients) = attention_bounds(e.path, f16);
            let inputs = if e.halves { " from f16" } else { "" };
            format!(
                "{:?}{inputs} {:.1e} / {:.1e} (at most {output:.0e} / {gradients:.0e})",
                e.path, e.output, e.gradients
            )
        })
        .collect();
    let precision = if f16 { "f16" } else { "f32" };
    let line = format!(
        "check: {precision} attention (output / gradients) off the CPU's relative to their \
         size: {}",
        each.join(", ")
    );
    let wrong = errors.iter().find(|e| !within_bounds(e, f16));
    match wrong {
        None => Ok(line),
        Some(e) => Err(Error::Invalid {
            op: "bench",
            why: format!("{line}: this GPU's attention on {:?} is wrong", e.path),
        }),
    }
}

/// Attention's output and the gradient of its packed input on `device` (on `path` on a GPU),
/// for the output's gradient `cotangent`, both given in f16 with `halves` (`packed_input`).
async fn run(
    device: &Device,
    path: Option<AttentionPath>,
    (input, cotangent, halves): (&[f64], &[f64], bool),
) -> Result<[Vec<f64>; 2]> {
    let x = Tensor::from_f64(input.to_vec(), &[BATCH * T, 3 * C], device)?.with_grad();
    let g = Tensor::from_f64(cotangent.to_vec(), &[BATCH, T, C], device)?;
    let g = if halves { g.to_f16()? } else { g };
    let (out, grad) = with_grad(|| {
        let out = packed_input(&x, halves)?.attention_packed_on(HEADS, path)?;
        let grads = out.backward_from(&g)?;
        let grad = grads.get(&x).cloned().ok_or_else(|| Error::Invalid {
            op: "bench",
            why: "attention gave its input no gradient".into(),
        })?;
        Ok::<_, Error>((out, grad))
    })?;
    Ok([out.to_vec_f64().await?, grad.to_vec_f64().await?])
}

/// The packed input [B, T, 3C] from `x` [B·T, 3C]: x itself, or with `halves` x in f16 as a
/// GPT's q, k, v layer stores it, made by an identity layer (the same values rounded) whose
/// product reads their gradient in f16, so that the matrix units' kernels store dq, dk and dv
/// in f16 (their f16 results), as in a GPT's f16 run. The check runs before any product is
/// timed, so the layer takes the f16 kernels wherever the device has them.
fn packed_input(x: &Tensor, halves: bool) -> Result<Tensor> {
    let shape = [BATCH, T, 3 * C];
    if !halves {
        return x.reshape(&shape);
    }
    let eye = (0..9 * C * C).map(|i| f64::from(i % (3 * C + 1) == 0));
    let eye = Tensor::from_f64(eye.collect(), &[3 * C, 3 * C], x.device())?;
    x.linear_halves(&eye, None)?.reshape(&shape)
}

/// The gradient of q (i = 0), k or v: its third of every row of the packed gradient.
fn part(values: &[f64], i: usize) -> Vec<f64> {
    values
        .chunks(C)
        .skip(i)
        .step_by(3)
        .flatten()
        .copied()
        .collect()
}
