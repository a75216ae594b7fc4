//! The tiled attention kernels' block measured: forward and backward of one attention timed
//! with each block of rows that fits the device's workgroup memory, the fastest kept for heads
//! of its width. On an H100 32 was fastest for heads of 64 (64 and 16 up to 1.8× as slow); on
//! an H200 a probe found 64; another GPU's memory and units may favour another.

use crate::clock;
use crate::gpu::{Gpu, Tuning};
use crate::ops::{attention_block_fits, ATTENTION_BLOCKS};
use crate::tensor::{Device, Tensor};
use crate::Result;
use std::rc::Rc;

/// Forward-and-backward passes timed together, and timings of each block, the fastest kept.
const PASSES: usize = 4;
const TRIES: usize = 3;

/// The block the tiled attention over `[batch, t, c, heads]` ran fastest with on `gpu`; the
/// only one that fits where one does, None where none does.
pub async fn fastest_block(
    gpu: &Rc<Gpu>,
    [batch, t, c, heads]: [usize; 4],
) -> Result<Option<usize>> {
    let fitting: Vec<usize> = ATTENTION_BLOCKS
        .into_iter()
        .filter(|&b| attention_block_fits(gpu, c / heads, b))
        .collect();
    if fitting.len() < 2 {
        return Ok(fitting.first().copied());
    }
    let opened = gpu.tuning();
    let fastest = time_blocks(gpu, &fitting, [batch, t, c, heads]).await;
    gpu.set_tuning(opened);
    fastest.map(Some)
}

/// The fastest of `blocks` for the attention over `[batch, t, c, heads]`, each set in the
/// device's tuning in turn (the caller restores it).
async fn time_blocks(
    gpu: &Rc<Gpu>,
    blocks: &[usize],
    [batch, t, c, heads]: [usize; 4],
) -> Result<usize> {
    let device = Device::Gpu(gpu.clone());
    let values = (0..batch * t * 3 * c)
        .map(|i| ((i % 97) as f64 - 48.0) / 97.0)
        .collect();
    let qkv = Tensor::from_f64(values, &[batch, t, 3 * c], &device)?.with_grad();
    let pass = || -> Result<()> {
        qkv.attention_packed(heads)?.sum_all()?.backward()?;
        Ok(())
    };
    let opened = gpu.tuning();
    let mut best = (f64::INFINITY, blocks[0]);
    for &block in blocks {
        gpu.set_tuning(Tuning {
            attention_blocks: [Some(block); 2],
            ..opened
        });
        // Its kernels compile on the first pass.
        pass()?;
        gpu.finished().await?;
        for _ in 0..TRIES {
            let start = clock::now();
            for _ in 0..PASSES {
                pass()?;
            }
            gpu.finished().await?;
            let seconds = (clock::now() - start).as_secs_f64();
            if seconds < best.0 {
                best = (seconds, block);
            }
        }
    }
    Ok(best.1)
}
