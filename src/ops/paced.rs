//! A kernel's runs timed for the autotuner (src/tune/): several back to back from a finished
//! GPU to the wait for their end, as many as take about PACED_SECONDS, so that the wait (in a
//! browser a millisecond or more, which a few runs would not outweigh) weighs little. Short
//! runs then time as they run in a step, bound by recording their dispatches as much as by the
//! GPU. ProductTimer (src/ops/matmul/calibrate.rs) and AttentionTimer
//! (src/ops/attention/timer.rs) time their candidates so.

use crate::clock;
use crate::error::Result;
use crate::gpu::Gpu;
use std::cell::Cell;
use std::rc::Rc;

const PACED_SECONDS: f64 = 0.004;
const MOST_CALLS: usize = 1024;

/// How many runs one timing takes on a GPU.
pub(crate) struct Paced {
    gpu: Rc<Gpu>,
    calls: Cell<usize>,
}

impl Paced {
    pub(crate) fn new(gpu: &Rc<Gpu>) -> Paced {
        Paced {
            gpu: gpu.clone(),
            calls: Cell::new(1),
        }
    }

    /// Sets how many runs of `run` each timing takes: as many as take PACED_SECONDS, found by
    /// multiplying the count until they do. One untimed run first: the first builds the
    /// kernels' pipelines, which in a browser can take longer than PACED_SECONDS and would
    /// leave every timing at one run, its figure mostly the wait for the GPU.
    pub(crate) async fn pace(&self, mut run: impl FnMut() -> Result<()>) -> Result<()> {
        self.calls.set(1);
        self.seconds(&mut run).await?;
        let mut calls = 1;
        loop {
            self.calls.set(calls);
            let took = self.seconds(&mut run).await? * calls as f64;
            if took >= PACED_SECONDS || calls >= MOST_CALLS {
                return Ok(());
            }
            let wanted = (PACED_SECONDS / took.max(1e-7)).ceil() as usize;
            calls = (calls * wanted.clamp(2, 16)).min(MOST_CALLS);
        }
    }

    /// Seconds one run of `run` takes, from the wall time of the paced count back to back and
    /// the wait for their end.
    pub(crate) async fn seconds(&self, mut run: impl FnMut() -> Result<()>) -> Result<f64> {
        self.gpu.finished().await?;
        let calls = self.calls.get();
        let start = clock::now();
        for _ in 0..calls {
            run()?;
        }
        self.gpu.finished().await?;
        Ok((clock::now() - start).as_secs_f64() / calls as f64)
    }
}
