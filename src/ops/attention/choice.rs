//! Which path packed causal attention takes on a GPU: the one timed fastest for its shape on
//! this device (src/tune/attention.rs), else the rule's, which was measured on one GPU: the
//! first of those open to it among the matrix units, the T × T scores (from
//! scores::SCORES_FROM positions), the tiled kernels and the row kernels.

use super::{matrix, scores, tiled, Dims};
use crate::error::{Error, Result};
use crate::gpu::{AttentionPath, AttentionShape, Gpu};

/// The shape `dm` as its choice depends on it on `gpu`.
pub(super) fn shape_of(gpu: &Gpu, dm: Dims) -> AttentionShape {
    AttentionShape {
        batch: dm.batch,
        t: dm.t,
        heads: dm.heads,
        d: dm.d,
        f16: gpu.tuning().f16_products.is_some(),
    }
}

pub(super) fn dims_of(shape: AttentionShape) -> Result<Dims> {
    Dims::new(shape.batch, shape.t, shape.heads * shape.d, shape.heads)
}

/// The paths attention of `shape` can take on `gpu`, the rule's first. The scores only from
/// scores::SCORES_FROM positions, where the footprint counts their probabilities; the row
/// kernels only where the tiled ones cannot run: they are slower wherever both can.
pub(crate) fn candidates(gpu: &Gpu, shape: AttentionShape) -> Vec<AttentionPath> {
    let Ok(dm) = dims_of(shape) else {
        return vec![AttentionPath::Rows];
    };
    let tiled = tiled::plan(gpu, dm).is_some();
    let open = [
        (AttentionPath::Matrix, matrix::units(gpu, dm).is_some()),
        (AttentionPath::Scores, scores::open(gpu, dm)),
        (AttentionPath::Tiled, tiled),
        (AttentionPath::Rows, !tiled),
    ];
    open.into_iter().filter(|o| o.1).map(|o| o.0).collect()
}

/// The path attention of `dm` takes on `gpu`: `forced` (a timing's), else the one chosen for
/// its shape, else the rule's, and then the shape is noted to be timed where it has a choice.
/// A path forced where it cannot run is an error; one chosen under another tuning (a test's,
/// or another precision's) gives way to the rule's.
pub(super) fn path(gpu: &Gpu, dm: Dims, forced: Option<AttentionPath>) -> Result<AttentionPath> {
    let shape = shape_of(gpu, dm);
    let paths = candidates(gpu, shape);
    let rule = paths[0];
    if let Some(path) = forced {
        return match paths.contains(&path) {
            true => Ok(path),
            false => Err(Error::Invalid {
                op: "attention",
                why: format!("{shape:?} cannot take {path:?}"),
            }),
        };
    }
    let chosen = gpu.attention_paths().chosen(&shape);
    Ok(match chosen {
        Some(path) if paths.contains(&path) => path,
        Some(_) => rule,
        None => {
            if paths.len() > 1 {
                gpu.attention_paths().note(shape);
            }
            rule
        }
    })
}
