//! Synthetic 2-D classification sets, in the spirit of TensorFlow Playground.

use super::{split_at_fraction, Labelled, Split};
use crate::{Error, Result};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::f64::consts::PI;

/// The 2-D sets (named by the tasks that learn them, train::Task).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointSet {
    Spiral,
    Circles,
    Xor,
    Gauss,
    Moons,
}

fn gaussian(rng: &mut SmallRng) -> f64 {
    let u1: f64 = rng.random_range(f64::EPSILON..1.0);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
}

/// `n` points of `set` in [-1, 1]², with Gaussian `noise` (a fraction of the extent), two
/// classes, shuffled; `val_fraction` of them held out for validation.
pub fn points(
    set: PointSet,
    n: usize,
    noise: f64,
    val_fraction: f64,
    seed: u64,
) -> Result<Labelled> {
    if n < 4 {
        return Err(Error::Invalid {
            op: "points",
            why: format!("{n} points are too few"),
        });
    }
    if !(0.0..=1.0).contains(&noise) {
        return Err(Error::Invalid {
            op: "points",
            why: "the noise must be between 0 and 1".into(),
        });
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut x = Vec::with_capacity(2 * n);
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let label = (i % 2) as u32;
        let t: f64 = rng.random();
        let (px, py) = match set {
            PointSet::Spiral => {
                // Two interleaved arms of 1.5 turns.
                let r = 0.05 + 0.9 * t;
                let angle = 3.0 * PI * t + PI * label as f64;
                (r * angle.cos(), r * angle.sin())
            }
            PointSet::Circles => {
                let r = if label == 0 {
                    0.35 * t.sqrt()
                } else {
                    0.6 + 0.3 * t
                };
                let angle = 2.0 * PI * rng.random::<f64>();
                (r * angle.cos(), r * angle.sin())
            }
            PointSet::Xor => {
                let a: f64 = rng.random_range(0.05..0.95);
                let b: f64 = rng.random_range(0.05..0.95);
                let (sa, sb) = if label == 0 { (1.0, 1.0) } else { (1.0, -1.0) };
                let flip = if rng.random::<bool>() { -1.0 } else { 1.0 };
                (sa * a * flip, sb * b * flip)
            }
            PointSet::Gauss => {
                let c = if label == 0 { 0.4 } else { -0.4 };
                (c + 0.2 * gaussian(&mut rng), c + 0.2 * gaussian(&mut rng))
            }
            PointSet::Moons => {
                let angle = PI * t;
                if label == 0 {
                    (angle.cos() * 0.6 - 0.3, angle.sin() * 0.6 - 0.15)
                } else {
                    (0.3 - angle.cos() * 0.6, 0.15 - angle.sin() * 0.6)
                }
            }
        };
        x.push((px + noise * gaussian(&mut rng)) as f32);
        x.push((py + noise * gaussian(&mut rng)) as f32);
        y.push(label);
    }
    // Shuffle before splitting so that validation covers the whole set.
    let mut order: Vec<usize> = (0..n).collect();
    rand::seq::SliceRandom::shuffle(&mut order[..], &mut rng);
    let all = Split {
        x: order
            .iter()
            .flat_map(|&i| [x[2 * i], x[2 * i + 1]])
            .collect(),
        y: order.iter().map(|&i| y[i]).collect(),
        features: 2,
    };
    let (train, val) = split_at_fraction(all, val_fraction);
    Ok(Labelled {
        train,
        val,
        classes: 2,
    })
}
