//! Datasets, seeded: synthetic 2-D sets, handwritten digits and text; and batching.

mod csv;
mod digits;
mod ink;
mod points;
mod text;
mod tokens;

pub use csv::points_from_csv;
pub use digits::{digits_from_gzip, DIGIT_SIDE};
pub use ink::digit_from_ink;
pub use points::{points, PointSet};
pub use text::{gunzip, spread_windows, text_from_file, windows, Text, Tokenizer, Vocab};
pub use tokens::{Gpt2Tokens, Tokens, Utf8Stream, GPT2_END_OF_TEXT, GPT2_VOCAB};

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

/// Shuffled passes over `n` examples, a batch at a time. Batch k is a pure function of the
/// seed and k, so a run resumed from a checkpoint draws exactly the batches it would have.
pub struct Batches {
    n: usize,
    seed: u64,
    /// The pass whose order is cached, and that order.
    pass: Option<(u64, Vec<usize>)>,
}

impl Batches {
    pub fn new(n: usize, seed: u64) -> Batches {
        Batches {
            n,
            seed,
            pass: None,
        }
    }

    /// The indices of batch `k` of `size` (each pass is a fresh shuffle; a batch never spans
    /// two passes).
    pub fn batch(&mut self, k: u64, size: usize) -> Vec<usize> {
        let size = size.min(self.n).max(1);
        let per_pass = (self.n / size) as u64;
        let (pass, at) = (k / per_pass, (k % per_pass) as usize * size);
        if self.pass.as_ref().map(|p| p.0) != Some(pass) {
            let mut order: Vec<usize> = (0..self.n).collect();
            order.shuffle(&mut SmallRng::seed_from_u64(mix(self.seed, pass)));
            self.pass = Some((pass, order));
        }
        let order = &self.pass.as_ref().expect("cached above").1;
        order[at..at + size].to_vec()
    }
}

/// Combines a seed and a counter into a new seed (SplitMix64's finaliser).
pub(crate) fn mix(seed: u64, k: u64) -> u64 {
    let mut z = seed ^ k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
