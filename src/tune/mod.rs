//! Autotuning: what the kernels' choices depend on but no adapter says, measured on the user's
//! GPU at first use and remembered per adapter (cache.rs), so that later visits and runs pay
//! nothing. Two figures: how many of the large-tile product's workgroups the GPU runs at once
//! (search.rs), which decides where a product's K is split to fill or balance its rounds
//! (src/ops/matmul/split.rs), unmeasured nothing is split for it; and which block of rows the
//! tiled attention kernels run fastest with (attention.rs), among those that fit.

mod attention;
pub mod cache;
mod search;

pub use cache::{Cache, Measured};

use crate::gpu::{Gpu, Tuning};
use crate::ops::{LargeTileTimer, BIG_TILE_WORKGROUP_BYTES};
use std::rc::Rc;
use std::time::Duration;

/// What the measurements run: products of up to `most_tiles` large tiles, and attention over
/// `attention` ([batch, positions, channels, heads]).
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    pub most_tiles: usize,
    pub attention: [usize; 4],
}

/// Up to 1,024 tiles (64 MiB of output), more than any GPU sold today runs at once; attention
/// with heads of 64 (nanochar's, GPT-2's) over 256 positions.
pub const PROBE: Probe = Probe {
    most_tiles: 1024,
    attention: [8, 256, 384, 6],
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
        let figures = match self.measured.attention_block {
            Some(b) => format!("{tiles} and attention fastest in blocks of {b}"),
            None => tiles,
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
        attention_block: tuned.measured.attention_block,
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
    let attention_block = attention::fastest_block(gpu, probe.attention).await?;
    gpu.release_free_buffers();
    let measured = Measured {
        tiles_at_once,
        attention_block,
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
