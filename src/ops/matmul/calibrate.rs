//! The products the autotuner times (src/tune/). `LargeTileTimer`: the large-tile product
//! (shaders/matmul.wgsl) at a given number of workgroups, for how many the GPU runs at once;
//! every workgroup multiplies the same two 128 × DEPTH operands (batch strides of 0) into its own
//! tile of C, so that the work grows with the tiles and the memory does not. `ProductTimer`:
//! one product shape as each of its variants (choices.rs).

use super::choices::dense;
use super::epilogue::{Epilogue, Store};
use super::layout::{Dims, Layout, Views};
use super::plan::{large_tiles_on, Needs};
use super::run::{gpu_product, params};
use super::split::Split;
use crate::clock;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, PooledBuffer, ProductShape, ProductVariant};
use crate::ops::launch_into;
use crate::ops::paced::Paced;
use crate::tensor::{gpu_output, Device, Tensor};
use std::rc::Rc;

/// K of the timed products: long enough that a round of tiles takes far longer than a wait for
/// the GPU (about 0.25 ms a round on each unit of an H100, seconds on none).
const DEPTH: usize = 2048;
/// Products timed back to back for one figure at first; then as many as take about
/// `TIMED_SECONDS`, so that the wait at the end weighs little (Firefox's end on a 2 ms nudge).
const FIRST_CALLS: usize = 8;
const TIMED_SECONDS: f64 = 0.01;
const MOST_CALLS: usize = 256;
/// A tile's side and its values.
const SIDE: usize = 128;

/// The large-tile kernel timed on `gpu`, for up to `most` tiles at once.
pub(crate) struct LargeTileTimer {
    gpu: Rc<Gpu>,
    a: Tensor,
    b: Tensor,
    c: PooledBuffer,
    most: usize,
    calls: std::cell::Cell<usize>,
}

impl LargeTileTimer {
    /// Operands of zeros and a C of `most` tiles on `gpu`.
    pub(crate) fn new(gpu: &Rc<Gpu>, most: usize) -> Result<LargeTileTimer> {
        let device = Device::Gpu(gpu.clone());
        Ok(LargeTileTimer {
            gpu: gpu.clone(),
            a: Tensor::zeros(&[SIDE, DEPTH], &device)?,
            b: Tensor::zeros(&[DEPTH, SIDE], &device)?,
            c: gpu_output(gpu, most * SIDE * SIDE)?,
            most,
            calls: std::cell::Cell::new(FIRST_CALLS),
        })
    }

    /// Sets how many products each timing runs: as many as `tiles` take in TIMED_SECONDS.
    pub(crate) async fn pace(&self, tiles: usize) -> Result<()> {
        self.calls.set(FIRST_CALLS);
        let each = self.seconds(tiles).await?.max(1e-7);
        let calls = (TIMED_SECONDS / each).ceil() as usize;
        self.calls.set(calls.clamp(FIRST_CALLS, MOST_CALLS));
        Ok(())
    }

    /// Seconds a product of `tiles` large tiles takes, from the wall time of several of them
    /// back to back and the wait for their end (`pace`).
    pub(crate) async fn seconds(&self, tiles: usize) -> Result<f64> {
        if tiles == 0 || tiles > self.most {
            return Err(Error::Invalid {
                op: "calibration",
                why: format!("{tiles} tiles, where 1 to {} were made room for", self.most),
            });
        }
        let d = Dims {
            m: SIDE,
            n: SIDE,
            k: DEPTH,
            batches: tiles,
        };
        let views = Views {
            heads: 1,
            a: Layout::dense(DEPTH, 0, 1),
            b: Layout::dense(SIDE, 0, 1),
            c: Layout::dense(SIDE, SIDE * SIDE, 1),
            row_sums: None,
        };
        let needs = Needs {
            vec4_buffers: true,
            ..Needs::default()
        };
        let plan = large_tiles_on((d, views), Split::whole(DEPTH), needs, &self.gpu.tuning());
        let kernel = plan.kernel.constant("TA", false).constant("TB", false);
        let kernel = kernel.slot("B_TYPE", "f32");
        let kernel = Epilogue::default().slots(kernel, Store::f32(plan.whole_vec4s));
        let params = params(&views, d, plan.split, None);
        self.gpu.finished().await?;
        let calls = self.calls.get();
        let start = clock::now();
        for _ in 0..calls {
            let inputs = [&self.a, &self.b];
            let [] = launch_into(
                &self.gpu,
                &kernel,
                &params,
                &inputs,
                &[&self.c],
                [],
                plan.groups,
            )?;
        }
        self.gpu.finished().await?;
        Ok((clock::now() - start).as_secs_f64() / calls as f64)
    }
}

/// The most floats a timed product's operands and output may hold together (256 MiB): a shape
/// larger has tiles enough to fill any GPU, and its planned variant stays.
const MOST_TIMED_FLOATS: usize = 64 << 20;

/// One product shape timed as each of its variants, on operands of zeros laid out densely.
pub(crate) struct ProductTimer {
    gpu: Rc<Gpu>,
    shape: ProductShape,
    a: Tensor,
    b: Tensor,
    paced: Paced,
}

impl ProductTimer {
    /// The operands of `shape` on `gpu`; None where they and the output would hold more than
    /// MOST_TIMED_FLOATS.
    pub(crate) fn new(gpu: &Rc<Gpu>, shape: ProductShape) -> Result<Option<ProductTimer>> {
        let (d, _, _) = dense(shape);
        let floats = d.batches * (d.m * d.k + d.k * d.n + d.m * d.n);
        if floats > MOST_TIMED_FLOATS {
            return Ok(None);
        }
        let device = Device::Gpu(gpu.clone());
        let stored = |t: bool, (r, c): (usize, usize)| {
            if t {
                [d.batches, c, r]
            } else {
                [d.batches, r, c]
            }
        };
        Ok(Some(ProductTimer {
            gpu: gpu.clone(),
            shape,
            a: Tensor::zeros(&stored(shape.a_transposed, (d.m, d.k)), &device)?,
            b: Tensor::zeros(&stored(shape.b_transposed, (d.k, d.n)), &device)?,
            paced: Paced::new(gpu),
        }))
    }

    /// Sets how many products each timing runs (`Paced::pace`).
    pub(crate) async fn pace(&self, variant: ProductVariant) -> Result<()> {
        self.paced.pace(|| self.run(variant)).await
    }

    /// Seconds a product takes as `variant`, from several back to back (`Paced::seconds`).
    pub(crate) async fn seconds(&self, variant: ProductVariant) -> Result<f64> {
        self.paced.seconds(|| self.run(variant)).await
    }

    fn run(&self, variant: ProductVariant) -> Result<()> {
        let (d, _, _) = dense(self.shape);
        let operands = [(self.a.clone(), d.m * d.k), (self.b.clone(), d.k * d.n)];
        let transposed = (self.shape.a_transposed, self.shape.b_transposed);
        let forced = (Epilogue::default(), Some(variant));
        drop(gpu_product(&self.gpu, &operands, d, transposed, forced)?);
        Ok(())
    }
}
