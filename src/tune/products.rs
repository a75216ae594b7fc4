//! Which variant each product shape runs as, timed on the user's GPU: the planner's rules
//! (src/ops/matmul/plan.rs, split.rs) were measured on a few GPUs, so the shapes a model takes
//! are timed as each valid variant (64 × 64 or 128 × 128 tiles, K whole or in parts, the f16
//! matrix units where the run asked for them) after its first step, and the fastest is kept
//! for the device and remembered (cache.rs). A variant replaces the planner's only where it is
//! clearly faster.

use super::attention::time_attention;
use super::cache::{self, Cache};
use crate::error::Result;
use crate::gpu::{Gpu, ProductShape, ProductVariant};
use crate::ops::{product_candidates, ProductTimer};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

/// Timings taken of each variant, in turns, the fastest kept.
const TRIES: usize = 3;
/// Another variant replaces the planner's only where it takes at most this share of its time:
/// a product timed alone runs only roughly as it does among a step's others.
const CLEARLY_FASTER: f64 = 0.95;

/// What timing the model's shapes gave: its products', and its attention's (attention.rs).
#[derive(Clone, Debug, PartialEq)]
pub struct ProductsTuned {
    /// Product shapes timed now.
    pub timed: usize,
    /// Attention shapes timed now.
    pub attention: usize,
    /// Of those, the shapes that run as another variant or path than the rules'.
    pub changed: usize,
    pub took: Duration,
}

impl ProductsTuned {
    /// Said beside the adapter; None where nothing was timed.
    pub fn sentence(&self) -> Option<String> {
        let products = (self.timed > 0).then(|| format!("{} product shapes", self.timed));
        let attention = match (self.attention, self.timed) {
            (0, _) => None,
            (1, 0) => Some("attention".to_string()),
            (1, _) => Some("its attention".to_string()),
            (n, _) => Some(format!("{n} attention shapes")),
        };
        let shapes: Vec<String> = products.into_iter().chain(attention).collect();
        (!shapes.is_empty()).then(|| {
            format!(
                "the model's {} timed in {:.2} s ({} faster as another kernel variant)",
                shapes.join(" and "),
                self.took.as_secs_f64(),
                self.changed
            )
        })
    }
}

/// Times the product shapes `gpu` planned since the last call and has no variant for, keeps the
/// fastest variant of each on the device and in `cache`; then its attention shapes so
/// (attention.rs).
pub async fn tune_products(gpu: &Rc<Gpu>, cache: &mut Cache) -> Result<ProductsTuned> {
    let start = crate::clock::now();
    let key = cache::key(gpu);
    let to_time = shapes_to_time(gpu);
    let (mut timed, mut changed) = (0, 0);
    let mut attention = Default::default();
    if !to_time.is_empty() || gpu.attention_paths().any_noted() {
        // The timer's operands come from a pool without the step's free buffers, which the
        // end destroys anyway: kept, they held the timing on top of the step's peak (GPT-2's
        // page fine-tuning held 717 MB for it against 672 at every other report). Only when
        // something is timed: the steps after an emptied pool make their buffers afresh.
        gpu.release_free_buffers();
        for (shape, candidates) in to_time {
            let planned = candidates[0];
            let Some(timer) = ProductTimer::new(gpu, shape)? else {
                gpu.product_variants().choose(shape, planned);
                continue;
            };
            timer.pace(planned).await?;
            let best = fastest(&candidates, |v| timer.seconds(v)).await?;
            gpu.product_variants().choose(shape, best);
            cache.remember_product(key.clone(), shape, best);
            timed += 1;
            changed += usize::from(best != planned);
        }
        attention = time_attention(gpu, cache, &key).await?;
        gpu.release_free_buffers();
    }
    Ok(ProductsTuned {
        timed,
        attention: attention.timed,
        changed: changed + attention.changed,
        took: crate::clock::now() - start,
    })
}

/// The shapes noted since the last call that have variants to time, with their candidates
/// (the planner's first); one of a single candidate gets it now, untimed.
fn shapes_to_time(gpu: &Gpu) -> Vec<(ProductShape, Vec<ProductVariant>)> {
    let tuning = gpu.tuning();
    let noted = gpu.product_variants().take_noted();
    // A shape that may take the matrix units, noted in an f16 run, timed after the precision
    // went back to f32 would be kept without them: it is left to the planner.
    let noted = noted
        .into_iter()
        .filter(|s| !s.f16 || tuning.f16_products.is_some());
    let mut to_time = Vec::new();
    for shape in noted {
        match product_candidates(shape, &tuning).as_slice() {
            [] => {}
            [only] => gpu.product_variants().choose(shape, *only),
            candidates => to_time.push((shape, candidates.to_vec())),
        }
    }
    to_time
}

/// `tune_products` from `kept`, a cache's text, with the text to keep now where something was
/// timed (None: nothing new), as `tune_kept` does for the device's figure.
pub async fn tune_products_kept(
    gpu: &Rc<Gpu>,
    kept: &str,
) -> (Result<ProductsTuned>, Option<String>) {
    let mut cache = Cache::parse(kept);
    let tuned = tune_products(gpu, &mut cache).await;
    let new = matches!(&tuned, Ok(t) if t.timed + t.attention > 0).then(|| cache.to_text());
    (tuned, new)
}

/// The fastest of `candidates` (the planner's first) by `seconds`, each timed TRIES times in
/// turns; the planner's unless another is CLEARLY_FASTER.
pub(super) async fn fastest<V: Copy, F, Fut>(candidates: &[V], mut seconds: F) -> Result<V>
where
    F: FnMut(V) -> Fut,
    Fut: Future<Output = Result<f64>>,
{
    let mut best = vec![f64::INFINITY; candidates.len()];
    for _ in 0..TRIES {
        for (time, &variant) in best.iter_mut().zip(candidates) {
            *time = time.min(seconds(variant).await?);
        }
    }
    let Some((first, rest)) = best.split_first() else {
        return Err(crate::error::Error::Invalid {
            op: "autotune",
            why: "no variant to time".into(),
        });
    };
    let quickest = rest
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .filter(|(_, &t)| t <= CLEARLY_FASTER * first);
    Ok(match quickest {
        Some((i, _)) => candidates[i + 1],
        None => candidates[0],
    })
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::gpu::Tiles;

    fn variant(tiles: Tiles, parts: usize) -> ProductVariant {
        ProductVariant { tiles, parts }
    }

    fn picked(times: [f64; 3]) -> ProductVariant {
        let candidates = [
            variant(Tiles::Large, 2),
            variant(Tiles::Small, 1),
            variant(Tiles::Large, 1),
        ];
        let seconds = |v: ProductVariant| {
            let i = candidates.iter().position(|c| *c == v).unwrap();
            async move { Ok(times[i]) }
        };
        pollster::block_on(fastest(&candidates, seconds)).unwrap()
    }

    #[test]
    fn the_faster_variant_is_picked_and_the_planners_kept_when_close() {
        // The third is fastest by far; the second, a little slower than the first.
        assert_eq!(picked([1.0, 1.1, 0.5]), variant(Tiles::Large, 1));
        assert_eq!(picked([1.0, 0.8, 0.9]), variant(Tiles::Small, 1));
        // 3 % faster is within the noise: the planner's stays.
        assert_eq!(picked([1.0, 0.97, 1.2]), variant(Tiles::Large, 2));
    }

    #[test]
    fn a_slow_timing_among_fast_ones_does_not_lose_a_variant() {
        use std::cell::Cell;
        let calls = Cell::new(0);
        let candidates = [variant(Tiles::Large, 1), variant(Tiles::Small, 1)];
        // The small tiles take half the time, but their first timing is slowed tenfold.
        let seconds = |v: ProductVariant| {
            calls.set(calls.get() + 1);
            let t = match (v.tiles, calls.get()) {
                (Tiles::Small, 2) => 5.0,
                (Tiles::Small, _) => 0.5,
                (Tiles::Large | Tiles::Matrix, _) => 1.0,
            };
            async move { Ok(t) }
        };
        let best = pollster::block_on(fastest(&candidates, seconds)).unwrap();
        assert_eq!(best, candidates[1]);
        assert_eq!(calls.get(), 2 * TRIES);
    }
}
