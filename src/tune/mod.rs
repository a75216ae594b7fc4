//! Autotuning: what the kernels' choices depend on but no adapter says, measured on the user's
//! GPU at first use and remembered per adapter (cache.rs), so that later visits and runs pay
//! nothing. Two figures: how many of the large-tile product's workgroups the GPU runs at once
//! (search.rs), which decides where a product's K is split to fill or balance its rounds
//! (src/ops/matmul/split.rs), unmeasured nothing is split for it; and which block of rows the
//! tiled attention kernels run fastest with (attention.rs), among those that fit, for heads of
//! each of `gpu::MEASURED_HEADS` wide.

mod attention;
pub mod cache;
mod search;

pub use cache::{Cache, Measured};

use crate::gpu::{Gpu, Tuning};
use crate::ops::{LargeTileTimer, BIG_TILE_WORKGROUP_BYTES};
use std::rc::Rc;
use std::time::Duration;

/// What the measurements run: products of up to `most_tiles` large tiles, and for each of
/// `gpu::MEASURED_HEADS` an attention over [batch, positions, channels, heads] whose heads are
/// that wide.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    pub most_tiles: usize,
    pub attention: [[usize; 4]; 2],
}

/// Up to 1,024 tiles (64 MiB of output), more than any GPU sold today runs at once; attention
/// as the playground's GPTs run it: the small one's (heads of 32 over 128 positions, batch 32)
/// and nanochar's (heads of 64 over 256, batch 8 of its 64).
pub const PROBE: Probe = Probe {
    most_tiles: 1024,
    attention: [[32, 128, 128, 4], [8, 256, 384, 6]],
};

/// How the device's figures came to be.
#[derive(Clone, Debug, PartialEq)]
pub enum How {
    /// Measured now, in this long.
    Measured(Duration),
    /// Read from what an earlier visit or run measured.
    Remembered,
    /// Not measured: asked not to (`WEBGRAD_AUTOTUNE=off`).
    Off,
    /// Not needed: the device takes no large tiles (an emulated GPU, or too little workgroup
    /// memory).
    NotUsed,
    /// The measurement failed, for this reason; the device works on unmeasured.
    Failed(String),
}

/// What autotuning gave a device.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    pub measured: Measured,
    pub how: How,
}

impl Tuned {
    fn unmeasured(how: How) -> Tuned {
        Tuned {
            measured: Measured::default(),
            how,
        }
    }

    /// Said beside the adapter: what was tuned and how long it took; None where nothing was.
    pub fn sentence(&self) -> Option<String> {
        let tiles = match self.measured.tiles_at_once {
            Some(n) => format!("runs {n} large product tiles at once"),
            None => "runs more large product tiles at once than were tried".into(),
        };
        let blocks: Vec<String> = crate::gpu::MEASURED_HEADS
            .iter()
            .zip(self.measured.attention_blocks)
            .filter_map(|(d, b)| Some(format!("{} for heads of {d}", b?)))
            .collect();
        let figures = match blocks.is_empty() {
            true => tiles,
            false => format!(
                "{tiles} and attention fastest in blocks of {}",
                blocks.join(", ")
            ),
        };
        match &self.how {
            How::Measured(took) => Some(format!(
                "tuned for this GPU: it {figures} (measured in {:.2} s, once)",
                took.as_secs_f64()
            )),
            How::Remembered => Some(format!(
                "tuned for this GPU: it {figures} (measured before)"
            )),
            How::Off => Some("not tuned for this GPU (autotuning is off)".into()),
            How::NotUsed => None,
            How::Failed(why) => Some(format!("not tuned for this GPU ({why})")),
        }
    }
}

/// Gives `gpu` its measured figures: from `cache` where this adapter's are there, else measured
/// now (`PROBE`) and added to it.
pub async fn tune(gpu: &Rc<Gpu>, cache: &mut Cache) -> Tuned {
    tune_with(gpu, cache, PROBE).await
}

/// `tune` with another probe (tests keep the measurement short so).
pub async fn tune_with(gpu: &Rc<Gpu>, cache: &mut Cache, probe: Probe) -> Tuned {
    let tuning = gpu.tuning();
    if tuning.emulated || tuning.workgroup_bytes < BIG_TILE_WORKGROUP_BYTES {
        return Tuned::unmeasured(How::NotUsed);
    }
    let key = cache::key(gpu);
    let tuned = match cache.measured(&key) {
        Some(measured) => Tuned {
            measured,
            how: How::Remembered,
        },
        None => match measure(gpu, probe).await {
            Ok((measured, took)) => {
                cache.remember(key, measured);
                Tuned {
                    measured,
                    how: How::Measured(took),
                }
            }
            Err(why) => Tuned::unmeasured(How::Failed(why.sentence())),
        },
    };
    gpu.set_tuning(Tuning {
        tiles_at_once: tuned.measured.tiles_at_once,
        attention_blocks: tuned.measured.attention_blocks,
        ..gpu.tuning()
    });
    tuned
}

/// Both figures on `gpu`, and how long finding them took.
async fn measure(gpu: &Rc<Gpu>, probe: Probe) -> crate::Result<(Measured, Duration)> {
    let start = crate::clock::now();
    let most = probe.most_tiles;
    let timer = LargeTileTimer::new(gpu, most)?;
    timer.seconds(1).await?;
    timer.pace(1).await?;
    let tiles_at_once = search::at_once(|tiles| timer.seconds(tiles), most).await?;
    drop(timer);
    let mut attention_blocks = [None; 2];
    for (block, shape) in attention_blocks.iter_mut().zip(probe.attention) {
        *block = attention::fastest_block(gpu, shape).await?;
    }
    gpu.release_free_buffers();
    let measured = Measured {
        tiles_at_once,
        attention_blocks,
    };
    Ok((measured, crate::clock::now() - start))
}

/// Natively: `gpu` tuned from the cache file (`cache::file`), which gets what is measured;
/// `WEBGRAD_AUTOTUNE=off` measures nothing, for runs that must not depend on a measurement
/// (the benchmark's reproductions).
#[cfg(not(target_arch = "wasm32"))]
pub fn tune_natively(gpu: &Rc<Gpu>) -> Tuned {
    if std::env::var("WEBGRAD_AUTOTUNE").is_ok_and(|v| v == "off") {
        return Tuned::unmeasured(How::Off);
    }
    let path = cache::file();
    let mut cache = path.as_deref().map(cache::load).unwrap_or_default();
    let tuned = pollster::block_on(tune(gpu, &mut cache));
    if let (How::Measured(_), Some(path)) = (&tuned.how, path) {
        // Unwritable, it is measured again next time: nothing is lost.
        let _ = cache::save(&cache, &path);
    }
    tuned
}
