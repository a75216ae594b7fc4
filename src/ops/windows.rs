//! A matrix larger than one storage binding (GPT-2's 154 MB token embedding on a GPU that
//! binds WebGPU's guaranteed 128 MiB), seen as windows of whole rows, each a view of the same
//! buffer that one binding holds. The ops that read such a table (the embedding's gather, the
//! output layer's products) go window by window; any other binding of it is refused by
//! `Gpu::dispatch`.

use crate::error::{Error, Result};
use crate::tensor::{Device, Tensor};

/// Bytes a window's start is a multiple of: where WebGPU lets a binding start on every device.
const START_ALIGNMENT: usize = 256;

/// The windows of `t` ([rows, cols] on a GPU) as (first row, view of its rows), or None where
/// one binding holds it whole (or not even 64 of its rows fit one).
pub(crate) fn row_windows(t: &Tensor) -> Option<Vec<(usize, Tensor)>> {
    let Device::Gpu(gpu) = t.device() else {
        return None;
    };
    let [rows, cols] = t.shape() else {
        return None;
    };
    let (rows, cols) = (*rows, *cols);
    let max = gpu.limits().max_storage_buffer_binding_size;
    // Windows start a multiple of 64 rows apart (128 of an f16 table), so 256 bytes times the
    // row's length, and end before the binding's limit.
    let row_bytes = (cols.max(1) * t.dtype().element_bytes()) as u64;
    let apart = START_ALIGNMENT / t.dtype().element_bytes();
    // A window's rows are a product's columns (x · windowᵀ), which a dispatch's workgroups
    // must cover.
    let columns = gpu.limits().max_compute_workgroups_per_dimension as usize
        * crate::ops::matmul::FEWEST_COLUMNS_A_GROUP;
    let per = ((max / row_bytes) as usize).min(columns) / apart * apart;
    if t.dtype().bytes(t.numel()) <= max || per == 0 {
        return None;
    }
    let window = |first: usize| (first, t.part(first * cols, &[per.min(rows - first), cols]));
    Some((0..rows).step_by(per).map(window).collect())
}

/// x · wᵀ for x [n, k] and w [rows, k]: whole, or a window of w's rows at a time, the
/// products' columns side by side.
pub(crate) fn times_transposed(x: &Tensor, w: &Tensor) -> Result<Tensor> {
    let Some(windows) = row_windows(w) else {
        return x.matmul_t(w, false, true);
    };
    frozen(w)?;
    let parts = windows
        .iter()
        .map(|(_, window)| x.matmul_t(window, false, true))
        .collect::<Result<Vec<_>>>()?;
    Tensor::concat(&parts, 1)
}

/// g · w for g [n, rows] and w [rows, k]: whole, or the sum over w's windows of rows of each
/// one's product with g's columns for them.
pub(crate) fn times(g: &Tensor, w: &Tensor) -> Result<Tensor> {
    let Some(windows) = row_windows(w) else {
        return g.matmul(w);
    };
    frozen(w)?;
    let mut parts = windows
        .iter()
        .map(|(first, window)| g.slice(1, *first, window.shape()[0])?.matmul(window));
    let first = parts.next().expect("a table in windows has rows")?;
    parts.try_fold(first, |sum, part| sum.add(&part?))
}

/// Refuses a table in windows that wants a gradient: its windows are views that pass none on.
fn frozen(w: &Tensor) -> Result<()> {
    match w.requires_grad() && crate::autograd::is_enabled() {
        true => Err(Error::Invalid {
            op: "matmul",
            why: "a table larger than one binding is only read, never trained".into(),
        }),
        false => Ok(()),
    }
}
