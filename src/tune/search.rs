//! How many workgroups a GPU runs at once, found from the time more of them take: up to that
//! many, one product of a tile each takes as long as one alone (each has a unit to itself);
//! one more, and some unit takes a second round. No adapter says how many units it has, so
//! this is measured rather than assumed (src/gpu/tuning.rs).

use crate::error::Result;
use std::future::Future;

/// A count takes a second round once it takes this many times as long as one workgroup alone.
/// Not less: a unit that holds two workgroups at once runs each more slowly, which is not a
/// second round (in Chrome on an H100, 133 to 264 large tiles took 1.3 to 1.5 times as long as
/// one, and 265 twice as long; at 1.5, one measurement found 132 and another 256).
const SLOWER: f64 = 1.75;
/// Timings taken of each count, the fastest kept: a slow one is noise (another process, a
/// clock still rising), a fast one is not.
const TRIES: usize = 3;

/// The most workgroups of one kind that `seconds` (the time of a product of that many) finds
/// running at once, up to `most`: counts doubled until one is SLOWER than a single workgroup,
/// then halved between the last two. None when even `most` are not slower.
pub async fn at_once<F, Fut>(mut seconds: F, most: usize) -> Result<Option<usize>>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<f64>>,
{
    // The first run of a kernel compiles it, and an idle GPU raises its clock as it works.
    for _ in 0..TRIES {
        seconds(most.min(64)).await?;
    }
    let base = fastest(&mut seconds, 1).await?;
    let mut slower = async |count: usize| -> Result<bool> {
        Ok(fastest(&mut seconds, count).await? > SLOWER * base)
    };
    let (mut fits, mut next) = (1, 2);
    let mut over = None;
    while next <= most {
        if slower(next).await? {
            over = Some(next);
            break;
        }
        fits = next;
        next *= 2;
    }
    let Some(mut over) = over else {
        return Ok(None);
    };
    while over - fits > 1 {
        let middle = (fits + over) / 2;
        match slower(middle).await? {
            true => over = middle,
            false => fits = middle,
        }
    }
    Ok(Some(fits))
}

/// The fastest of TRIES timings of `count`.
async fn fastest<F, Fut>(seconds: &mut F, count: usize) -> Result<f64>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<f64>>,
{
    let mut best = f64::INFINITY;
    for _ in 0..TRIES {
        best = best.min(seconds(count).await?);
    }
    Ok(best)
}

// Natively: the tests wait on the futures with pollster.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    fn found(seconds: fn(usize) -> f64, most: usize) -> Option<usize> {
        pollster::block_on(at_once(|n| async move { Ok(seconds(n)) }, most)).unwrap()
    }

    #[test]
    fn the_count_before_a_second_round_is_found() {
        // 40 units, a round each: 41 workgroups take twice as long as 40.
        assert_eq!(found(|n| n.div_ceil(40) as f64, 1024), Some(40));
        // 132 units that run two each, slower together: a second round at 265.
        let two_each = |n: usize| match n {
            0..=132 => 1.0,
            133..=264 => 1.5,
            _ => 1.5 * n.div_ceil(264) as f64,
        };
        assert_eq!(found(two_each, 1024), Some(264));
        // One unit; and more units than the search makes room for.
        assert_eq!(found(|n| n as f64, 1024), Some(1));
        assert_eq!(found(|n| n.div_ceil(2000) as f64, 1024), None);
    }

    #[test]
    fn a_slow_timing_among_fast_ones_is_not_taken_for_a_round() {
        // Every third timing is slowed tenfold (another program on the GPU).
        use std::cell::Cell;
        let calls = Cell::new(0);
        let seconds = |n: usize| {
            calls.set(calls.get() + 1);
            let noise = if calls.get() % 3 == 0 { 10.0 } else { 1.0 };
            let t = n.div_ceil(24) as f64 * noise;
            async move { Ok(t) }
        };
        assert_eq!(
            pollster::block_on(at_once(seconds, 1024)).unwrap(),
            Some(24)
        );
    }
}
