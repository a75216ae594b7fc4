//! Which path each attention shape takes, timed on the user's GPU: the rule that picks it
//! (src/ops/attention/choice.rs) was measured on one GPU, and which of the matrix units, the
//! T × T scores and the tiled kernels is fastest depends on the GPU, the sequence's length and
//! the precision. So the attention shapes a model runs are timed, a forward and a backward
//! pass on each path, after its first step with the products (products.rs), and the fastest
//! is kept for the device and remembered (cache.rs).

use super::cache::Cache;
use super::products::fastest;
use crate::error::Result;
use crate::gpu::{AttentionPath, AttentionShape, Gpu};
use crate::ops::{attention_candidates, AttentionTimer};
use std::rc::Rc;

/// Shapes timed and, of those, the ones that take another path than the rule's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Timed {
    pub(super) timed: usize,
    pub(super) changed: usize,
}

/// Times the attention shapes `gpu` ran since the last call without a chosen path, keeps the
/// fastest path of each on the device and in `cache`, under the adapter's `key`.
pub(super) async fn time_attention(gpu: &Rc<Gpu>, cache: &mut Cache, key: &str) -> Result<Timed> {
    let mut count = Timed::default();
    for (shape, paths) in shapes_to_time(gpu) {
        let rule = paths[0];
        let Some(timer) = AttentionTimer::new(gpu, shape)? else {
            gpu.attention_paths().choose(shape, rule);
            continue;
        };
        timer.pace(rule).await?;
        let best = fastest(&paths, |p| timer.seconds(p)).await?;
        gpu.attention_paths().choose(shape, best);
        cache.remember_attention(key.to_string(), shape, best);
        count.timed += 1;
        count.changed += usize::from(best != rule);
    }
    Ok(count)
}

/// The shapes noted since the last call with their paths (the rule's first), but for those
/// noted under the matrix units that would now be timed without them (the precision went back
/// to f32 since): left to the rule, as products.rs leaves such products.
fn shapes_to_time(gpu: &Gpu) -> Vec<(AttentionShape, Vec<AttentionPath>)> {
    let f16 = gpu.tuning().f16_products.is_some();
    let noted = gpu.attention_paths().take_noted();
    noted
        .into_iter()
        .filter(|s| s.f16 == f16)
        .map(|s| (s, attention_candidates(gpu, s)))
        .filter(|(_, paths)| paths.len() > 1)
        .collect()
}
