//! Moving data to and from the GPU, and taking buffers from the pool: the fixed costs that
//! decide whether a small model is worth the GPU at all (see train::routing).

use super::timing::{median, random, significant};
use crate::{Device, Gpu, Result, Tensor};
use std::rc::Rc;

/// Bytes of each transfer: one small enough to time the latency alone, then sizes where
/// bandwidth dominates.
pub(super) const SIZES: [(&str, usize); 4] = [
    ("4KiB", 4 << 10),
    ("1MiB", 1 << 20),
    ("16MiB", 16 << 20),
    ("64MiB", 64 << 20),
];

/// Bytes of the buffers taken from the pool.
pub(super) const ALLOC_BYTES: (&str, usize) = ("1MiB", 1 << 20);
/// Allocations per timed batch: one is far shorter than the clock's resolution in a browser.
const ALLOCS_PER_BATCH: usize = 200;

/// `upload_SIZE`: a tensor made from host data and the GPU waited for, so the write reached it.
pub(super) async fn upload(gpu: &Rc<Gpu>, name: &str, bytes: usize, reps: usize) -> Result<String> {
    let d = Device::Gpu(gpu.clone());
    let data = random(bytes / 4, 4);
    let mut times = Vec::with_capacity(reps);
    for rep in 0..reps + 2 {
        let copy = data.clone();
        let start = crate::clock::now();
        let t = Tensor::from_vec(copy, &[bytes / 4], &d)?;
        gpu.finished().await?;
        if rep >= 2 {
            times.push((crate::clock::now() - start).as_secs_f64());
        }
        drop(t);
    }
    Ok(bandwidth_line(name, median(times), bytes))
}

/// `readback_SIZE`: a GPU tensor read back to the host.
pub(super) async fn readback(
    gpu: &Rc<Gpu>,
    name: &str,
    bytes: usize,
    reps: usize,
) -> Result<String> {
    let t = Tensor::from_vec(
        random(bytes / 4, 5),
        &[bytes / 4],
        &Device::Gpu(gpu.clone()),
    )?;
    gpu.finished().await?;
    let mut times = Vec::with_capacity(reps);
    for rep in 0..reps + 2 {
        let start = crate::clock::now();
        let values = t.to_vec().await?;
        if rep >= 2 {
            times.push((crate::clock::now() - start).as_secs_f64());
        }
        drop(values);
    }
    Ok(bandwidth_line(name, median(times), bytes))
}

fn bandwidth_line(name: &str, seconds: f64, bytes: usize) -> String {
    let v = serde_json::json!({
        "ms": significant(seconds * 1e3),
        "gb_per_s": significant(bytes as f64 / seconds / 1e9),
    });
    format!("{name} {v}")
}

/// `alloc_SIZE_pooled` and `alloc_SIZE_fresh`: a storage buffer taken and returned, from the
/// pool's free list, and created anew each time (the pool emptied first, so the time covers
/// creating the buffer and destroying it).
pub(super) fn allocation(
    gpu: &Rc<Gpu>,
    name: &str,
    (bytes, fresh): (usize, bool),
    reps: usize,
) -> Result<String> {
    gpu.release_free_buffers();
    drop(gpu.alloc(bytes as u64, false)?);
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = crate::clock::now();
        for _ in 0..ALLOCS_PER_BATCH {
            if fresh {
                gpu.release_free_buffers();
            }
            drop(gpu.alloc(bytes as u64, false)?);
        }
        times.push((crate::clock::now() - start).as_secs_f64() / ALLOCS_PER_BATCH as f64);
    }
    gpu.release_free_buffers();
    let s = median(times);
    let v = serde_json::json!({
        "ms": significant(s * 1e3),
        "allocs_per_s": significant(1.0 / s),
    });
    Ok(format!("{name} {v}"))
}
