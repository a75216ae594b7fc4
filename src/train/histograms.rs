//! Weight histograms: how each weight matrix's values spread, computed on the session's device
//! from tested ops (a comparison mask against the bin edges, summed per edge) and read back
//! together. Bins span ±4 standard deviations of the matrix, the outer two holding the tails.

use super::insides::read_all;
use super::Session;
use crate::{no_grad, Result, Tensor};

/// Bins per histogram.
pub const BINS: usize = 24;
/// The bins span this many standard deviations either side of 0.
const SPREAD: f32 = 4.0;
/// Values compared at once: the mask is (BINS - 1) × this many floats, well under the
/// browsers' 128 MiB binding limit.
const CHUNK: usize = 1 << 19;

/// One matrix's histogram: counts of values in BINS equal bins over [-range, range].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Histogram {
    pub name: String,
    pub range: f32,
    pub counts: Vec<u64>,
}

/// The fraction of the range at each inner bin edge, from -1 to 1: [BINS - 1, 1].
fn edge_fractions() -> Vec<f32> {
    (1..BINS)
        .map(|k| 2.0 * k as f32 / BINS as f32 - 1.0)
        .collect()
}

/// [1 + BINS - 1]: the matrix's standard deviation about 0, then for each inner edge the
/// number of values at or above it.
fn counts_above_edges(w: &Tensor) -> Result<Tensor> {
    let n = w.numel();
    let flat = w.reshape(&[n])?;
    let sigma = flat.mul(&flat)?.sum_all()?.scale(1.0 / n as f32)?.sqrt()?;
    let reach = sigma.scale(SPREAD)?.add_scalar(f32::MIN_POSITIVE)?;
    let fractions = Tensor::from_vec(edge_fractions(), &[BINS - 1, 1], w.device())?;
    let edges = fractions.mul(&reach.reshape(&[1, 1])?)?;
    let mut above = Tensor::zeros(&[BINS - 1], w.device())?;
    for start in (0..n).step_by(CHUNK) {
        let len = CHUNK.min(n - start);
        let part = flat.slice(0, start, len)?.reshape(&[1, len])?;
        above = above.add(&part.ge_mask(&edges)?.sum(1, false)?)?;
    }
    Tensor::concat(&[reach.reshape(&[1])?, above], 0)
}

/// Counts per bin from the counts at or above each inner edge.
fn bins_from_above(total: u64, above: &[f32]) -> Vec<u64> {
    let above: Vec<u64> = above.iter().map(|&c| c.round() as u64).collect();
    let mut counts = Vec::with_capacity(BINS);
    // Saturating: a matrix holding a non-finite value has NaN edges and no order to its counts.
    counts.push(total.saturating_sub(above[0]));
    counts.extend(above.windows(2).map(|w| w[0].saturating_sub(w[1])));
    counts.push(above[BINS - 2]);
    counts
}

impl Session {
    /// A histogram of each weight matrix (the parameters of two or more dimensions).
    pub async fn weight_histograms(&self) -> Result<Vec<Histogram>> {
        let matrices: Vec<&(String, Tensor)> =
            self.params.iter().filter(|(_, p)| p.rank() >= 2).collect();
        let named = no_grad(|| {
            matrices
                .iter()
                .map(|(name, p)| Ok((name.clone(), counts_above_edges(p)?)))
                .collect::<Result<Vec<_>>>()
        })?;
        let read = read_all(named).await?;
        Ok(read
            .into_iter()
            .zip(&matrices)
            .map(|(r, (_, p))| Histogram {
                name: r.name,
                range: r.values[0],
                counts: bins_from_above(p.numel() as u64, &r.values[1..]),
            })
            .collect())
    }
}
