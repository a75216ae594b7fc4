//! Datasets, seeded: synthetic 2-D sets, handwritten digits and text; and batching.

mod digits;
mod points;
mod text;

pub use digits::{digits_from_gzip, DIGIT_SIDE};
pub use points::{points, PointSet};
pub use text::{Text, Vocab, Windows};

use rand::{rngs::SmallRng, seq::SliceRandom, SeedableRng};

/// Labelled examples: `features` f32 values and one class per example.
#[derive(Debug, Clone, Default)]
pub struct Split {
    pub x: Vec<f32>,
    pub y: Vec<u32>,
    pub features: usize,
}

impl Split {
    pub fn len(&self) -> usize {
        self.y.len()
    }

    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Examples `idx` as (features, labels).
    pub fn gather(&self, idx: &[usize]) -> (Vec<f32>, Vec<u32>) {
        let f = self.features;
        let x = idx
            .iter()
            .flat_map(|&i| self.x[i * f..(i + 1) * f].iter().copied())
            .collect();
        (x, idx.iter().map(|&i| self.y[i]).collect())
    }
}

/// A classification dataset split into training and validation examples.
#[derive(Debug, Clone)]
pub struct Labelled {
    pub train: Split,
    pub val: Split,
    pub classes: usize,
}

/// Shuffled passes over `n` examples, a batch at a time, from a seed.
pub struct Batches {
    order: Vec<usize>,
    at: usize,
    rng: SmallRng,
}

impl Batches {
    pub fn new(n: usize, seed: u64) -> Batches {
        let mut b = Batches {
            order: (0..n).collect(),
            at: n,
            rng: SmallRng::seed_from_u64(seed),
        };
        b.reshuffle();
        b
    }

    fn reshuffle(&mut self) {
        self.order.shuffle(&mut self.rng);
        self.at = 0;
    }

    /// The next `size` indices (a new shuffle starts when a pass runs out).
    pub fn next(&mut self, size: usize) -> Vec<usize> {
        if self.at + size > self.order.len() {
            self.reshuffle();
        }
        let out = self.order[self.at..self.at + size.min(self.order.len())].to_vec();
        self.at += size;
        out
    }
}

/// Splits examples into the first `1 - val_fraction` for training and the rest for validation.
pub(crate) fn split_at_fraction(all: Split, val_fraction: f64) -> (Split, Split) {
    let n_val = ((all.len() as f64) * val_fraction).round() as usize;
    let n_train = all.len() - n_val;
    let f = all.features;
    let train = Split {
        x: all.x[..n_train * f].to_vec(),
        y: all.y[..n_train].to_vec(),
        features: f,
    };
    let val = Split {
        x: all.x[n_train * f..].to_vec(),
        y: all.y[n_train..].to_vec(),
        features: f,
    };
    (train, val)
}
