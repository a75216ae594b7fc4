//! Keeping the best: which evaluation had the lowest validation loss, and when a run has gone
//! long enough without beating it to stop.

/// What an evaluation means for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The lowest validation loss so far: keep these weights.
    Best,
    /// Not better than the best; go on.
    NotBetter,
    /// Not better for `patience` evaluations in a row: stop.
    Stop,
}

/// The best validation loss seen and the evaluations since.
#[derive(Debug, Clone)]
pub struct BestKeeper {
    best: Option<(f32, u64)>,
    since_best: u32,
    patience: Option<u32>,
}

impl BestKeeper {
    /// A keeper that stops after `patience` evaluations without a better loss (never if None).
    pub fn new(patience: Option<u32>) -> BestKeeper {
        BestKeeper {
            best: None,
            since_best: 0,
            patience,
        }
    }

    /// Records the validation loss `loss` at `step`.
    pub fn observe(&mut self, loss: f32, step: u64) -> Verdict {
        if self.best.is_none_or(|(best, _)| loss < best) {
            self.best = Some((loss, step));
            self.since_best = 0;
            return Verdict::Best;
        }
        self.since_best += 1;
        match self.patience {
            Some(p) if self.since_best >= p => Verdict::Stop,
            _ => Verdict::NotBetter,
        }
    }

    /// The lowest validation loss seen and its step.
    pub fn best(&self) -> Option<(f32, u64)> {
        self.best
    }

    /// The best loss, when `loss` has run away from it: ten times as high and 10 nats more.
    /// Noise and a little overfitting never come near that; a learning rate too high for the
    /// model does (a finite loss that grows, which the NaN guard does not catch).
    pub fn runaway(&self, loss: f32) -> Option<f32> {
        let (best, _) = self.best?;
        (loss > (10.0 * best).max(best + 10.0)).then_some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_lowest_and_stops_when_patience_runs_out() {
        let mut k = BestKeeper::new(Some(2));
        assert_eq!(k.observe(2.0, 10), Verdict::Best);
        assert_eq!(k.observe(1.5, 20), Verdict::Best);
        assert_eq!(k.observe(1.7, 30), Verdict::NotBetter);
        assert_eq!(k.observe(1.4, 40), Verdict::Best);
        assert_eq!(
            k.observe(1.4, 50),
            Verdict::NotBetter,
            "a tie is not better"
        );
        assert_eq!(k.observe(1.9, 60), Verdict::Stop);
        assert_eq!(k.best(), Some((1.4, 40)));
        assert_eq!(k.runaway(13.0), None, "13 is under ten times 1.4");
        assert_eq!(k.runaway(14.5), Some(1.4));
        let mut small = BestKeeper::new(None);
        small.observe(0.05, 1);
        assert_eq!(small.runaway(5.0), None, "5 is under 0.05 + 10");
        assert_eq!(small.runaway(10.5), Some(0.05));
        assert_eq!(
            BestKeeper::new(None).runaway(1e12),
            None,
            "nothing to compare with"
        );
        let mut patient = BestKeeper::new(None);
        patient.observe(1.0, 1);
        for step in 2..100 {
            assert_eq!(patient.observe(2.0, step), Verdict::NotBetter);
        }
    }
}
