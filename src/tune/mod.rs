//! Autotuning: what the kernels' choices depend on but no adapter says, measured on the user's
//! GPU at first use and remembered per adapter (cache.rs), so that later visits and runs pay
//! nothing. When the device opens, how many of the large-tile product's workgroups the GPU
//! runs at once (search.rs), which decides where a product's K is split to fill or balance its
//! rounds (src/ops/matmul/split.rs; unmeasured, nothing is split for it); after a model's first
//! step, the variant each of its product shapes runs fastest as (products.rs) and the path
//! each of its attention shapes runs fastest on (attention.rs).

mod attention;
pub mod cache;
mod products;
mod search;

pub use cache::Cache;
pub use products::{tune_products, tune_products_kept, ProductsTuned};

use crate::gpu::Gpu;
use crate::ops::{LargeTileTimer, BIG_TILE_WORKGROUP_BYTES};
use std::rc::Rc;
use std::time::Duration;

/// The most large tiles the measurement makes room for (64 MiB of output): more than any GPU
/// sold today runs at once.
const MOST_TILES: usize = 1024;

/// How the device's figure came to be.
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
    pub tiles_at_once: Option<usize>,
    pub how: How,
}

impl Tuned {
    /// Said beside the adapter: what was tuned and how long it took; None where nothing was.
    pub fn sentence(&self) -> Option<String> {
        let figure = match self.tiles_at_once {
            Some(n) => format!("runs {n} large product tiles at once"),
            None => format!("runs more than {MOST_TILES} large product tiles at once"),
        };
        match &self.how {
            How::Measured(took) => Some(format!(
                "tuned for this GPU: it {figure} (measured in {:.2} s, once)",
                took.as_secs_f64()
            )),
            How::Remembered => Some(format!("tuned for this GPU: it {figure} (measured before)")),
            How::Off => Some("not tuned for this GPU (autotuning is off)".into()),
            How::NotUsed => None,
            How::Failed(why) => Some(format!("not tuned for this GPU ({why})")),
        }
    }
}

/// Gives `gpu` its measured figures: from `cache` where this adapter's are there, else measured
/// now and added to it.
pub async fn tune(gpu: &Rc<Gpu>, cache: &mut Cache) -> Tuned {
    tune_up_to(gpu, cache, MOST_TILES).await
}

/// `gpu` tuned from `kept`, what was measured before (a cache's text, as `Cache::to_text`
/// writes it), with the text to keep now where something was measured (None: nothing new).
/// The page's worker and bench mode keep it in the browser's storage, the CLI in a file.
pub async fn tune_kept(gpu: &Rc<Gpu>, kept: &str) -> (Tuned, Option<String>) {
    let mut cache = Cache::parse(kept);
    let tuned = tune(gpu, &mut cache).await;
    let new = matches!(tuned.how, How::Measured(_)).then(|| cache.to_text());
    (tuned, new)
}

/// `tune`, looking no further than `most` tiles at once (tests keep the measurement short so).
pub async fn tune_up_to(gpu: &Rc<Gpu>, cache: &mut Cache, most: usize) -> Tuned {
    let key = cache::key(gpu);
    for (shape, variant) in cache.products(&key) {
        gpu.product_variants().choose(shape, variant);
    }
    for (shape, path) in cache.attention(&key) {
        gpu.attention_paths().choose(shape, path);
    }
    let tuning = gpu.tuning();
    if tuning.emulated || tuning.workgroup_bytes < BIG_TILE_WORKGROUP_BYTES {
        return Tuned {
            tiles_at_once: None,
            how: How::NotUsed,
        };
    }
    let tuned = match cache.tiles_at_once(&key) {
        Some(tiles_at_once) => Tuned {
            tiles_at_once,
            how: How::Remembered,
        },
        None => match measure(gpu, most).await {
            Ok((tiles_at_once, took)) => {
                cache.remember(key, tiles_at_once);
                Tuned {
                    tiles_at_once,
                    how: How::Measured(took),
                }
            }
            Err(why) => Tuned {
                tiles_at_once: None,
                how: How::Failed(why.sentence()),
            },
        },
    };
    gpu.set_tuning(crate::gpu::Tuning {
        tiles_at_once: tuned.tiles_at_once,
        ..gpu.tuning()
    });
    tuned
}

/// The large tiles `gpu` runs at once (up to `most`), and how long finding it took.
async fn measure(gpu: &Rc<Gpu>, most: usize) -> crate::Result<(Option<usize>, Duration)> {
    let start = crate::clock::now();
    let timer = LargeTileTimer::new(gpu, most)?;
    // Its kernel compiles on the first timing; then each timing runs for about 10 ms.
    timer.seconds(1).await?;
    timer.pace(1).await?;
    let found = search::at_once(|tiles| timer.seconds(tiles), most).await?;
    drop(timer);
    gpu.release_free_buffers();
    Ok((found, crate::clock::now() - start))
}

/// Natively: `gpu` tuned from the cache file (`cache::file`), which gets what is measured;
/// `WEBGRAD_AUTOTUNE=off` measures nothing, for runs that must not depend on a measurement
/// (the benchmark's reproductions).
#[cfg(not(target_arch = "wasm32"))]
pub fn tune_natively(gpu: &Rc<Gpu>) -> Tuned {
    if autotune_off() {
        return Tuned {
            tiles_at_once: None,
            how: How::Off,
        };
    }
    with_cache_file(|kept| pollster::block_on(tune_kept(gpu, kept)))
}

/// Natively: the product shapes `gpu` planned since the last call timed (`tune_products`), the
/// cache file getting what is measured; None where autotuning is off.
#[cfg(not(target_arch = "wasm32"))]
pub fn tune_products_natively(gpu: &Rc<Gpu>) -> Option<crate::Result<ProductsTuned>> {
    if autotune_off() {
        gpu.product_variants().take_noted();
        gpu.attention_paths().take_noted();
        return None;
    }
    Some(with_cache_file(|kept| {
        pollster::block_on(tune_products_kept(gpu, kept))
    }))
}

#[cfg(not(target_arch = "wasm32"))]
fn autotune_off() -> bool {
    std::env::var("WEBGRAD_AUTOTUNE").is_ok_and(|v| v == "off")
}

/// What `tune` gives from the cache file's text, the file rewritten with the text it hands back
/// (None: nothing new). Unwritable, it is measured again next time: nothing is lost.
#[cfg(not(target_arch = "wasm32"))]
fn with_cache_file<T>(tune: impl FnOnce(&str) -> (T, Option<String>)) -> T {
    let path = cache::file();
    let kept = path
        .as_deref()
        .and_then(|p| std::fs::read_to_string(p).ok());
    let (tuned, new) = tune(&kept.unwrap_or_default());
    if let (Some(text), Some(path)) = (new, path) {
        let _ = cache::save(&text, &path);
    }
    tuned
}
