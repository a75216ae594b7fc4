//! Learning-rate schedules.

use serde::{Deserialize, Serialize};

/// How the learning rate moves over training.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Schedule {
    Constant,
    /// Linear warm-up from 0 over `warmup` steps, then cosine decay to `min_ratio` × lr at
    /// step `total`, constant after.
    WarmupCosine {
        warmup: u64,
        total: u64,
        min_ratio: f32,
    },
}

crate::setting_enum! {
    /// The schedules by name, as the page's control chooses them.
    pub enum ScheduleKind {
        Constant,
        Cosine,
    }
}

/// Warm-up steps of the cosine schedule: long enough for Adam's second moments to settle
/// before the full learning rate.
const WARMUP_STEPS: u64 = 50;
/// Where the cosine ends, as a fraction of the base learning rate (nanoGPT's 1e-4 of 1e-3).
const MIN_RATIO: f32 = 0.1;

impl ScheduleKind {
    /// The schedule of this kind for a run of `steps` steps.
    pub fn for_steps(self, steps: u64) -> Schedule {
        match self {
            ScheduleKind::Constant => Schedule::Constant,
            ScheduleKind::Cosine => Schedule::warmup_cosine(WARMUP_STEPS, steps),
        }
    }
}

impl Schedule {
    /// Warm-up over `warmup` steps, then cosine down to `MIN_RATIO` at step `total`.
    pub fn warmup_cosine(warmup: u64, total: u64) -> Schedule {
        Schedule::WarmupCosine {
            warmup,
            total,
            min_ratio: MIN_RATIO,
        }
    }

    pub fn kind(&self) -> ScheduleKind {
        match self {
            Schedule::Constant => ScheduleKind::Constant,
            Schedule::WarmupCosine { .. } => ScheduleKind::Cosine,
        }
    }

    /// The same schedule ending at step `steps` instead (a run given its own step count).
    pub fn ending_at(&self, steps: u64) -> Schedule {
        match *self {
            Schedule::Constant => Schedule::Constant,
            Schedule::WarmupCosine {
                warmup, min_ratio, ..
            } => Schedule::WarmupCosine {
                warmup,
                total: steps,
                min_ratio,
            },
        }
    }

    /// The factor on the base learning rate at `step` (counted from 0).
    pub fn factor(&self, step: u64) -> f32 {
        match *self {
            Schedule::Constant => 1.0,
            Schedule::WarmupCosine {
                warmup,
                total,
                min_ratio,
            } => {
                if step < warmup {
                    return (step + 1) as f32 / warmup as f32;
                }
                let span = total.saturating_sub(warmup).max(1);
                let t = ((step - warmup) as f32 / span as f32).min(1.0);
                min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + (std::f32::consts::PI * t).cos())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Schedule;

    #[test]
    fn warmup_then_cosine() {
        let s = Schedule::WarmupCosine {
            warmup: 10,
            total: 110,
            min_ratio: 0.1,
        };
        assert!((s.factor(0) - 0.1).abs() < 1e-6);
        assert!((s.factor(9) - 1.0).abs() < 1e-6);
        assert!((s.factor(10) - 1.0).abs() < 1e-6);
        assert!((s.factor(60) - 0.55).abs() < 1e-6);
        assert!((s.factor(110) - 0.1).abs() < 1e-6);
        assert!((s.factor(500) - 0.1).abs() < 1e-6);
        assert_eq!(Schedule::Constant.factor(1234), 1.0);
    }
}
