//! The frames of a run's replay: what the output view showed at the steps it was read, and
//! the one the replay slider shows. No page in it: `replay` draws them.

use super::protocol::Tile;

/// Frames kept per run: when full, every other one is dropped, so the run's whole length
/// stays covered at half the density.
const MOST_FRAMES: usize = 240;

/// What the output view showed at one step.
#[derive(Clone)]
pub enum Shown {
    /// P(class) over the boundary's grid.
    Plane(Vec<f32>),
    /// The test digit grid with the guesses of that step.
    Digits(Vec<Tile>),
}

/// The run's frames, in step order, and the one the slider shows (None: live).
#[derive(Default)]
pub struct Frames {
    kept: Vec<(u64, Shown)>,
    chosen: Option<usize>,
}

impl Frames {
    /// Forgets the run's frames (a new run).
    pub fn clear(&mut self) {
        self.kept.clear();
        self.chosen = None;
    }

    pub fn add(&mut self, step: u64, shown: Shown) {
        if self.kept.last().is_some_and(|(s, _)| *s >= step) {
            // Read again at the same step (a choice in the views): the newer replaces it.
            self.kept.retain(|(s, _)| *s < step);
        }
        self.kept.push((step, shown));
        // The frame shown may be gone (read again at its step): back to live.
        self.chosen = self.chosen.filter(|&c| c + 1 < self.kept.len());
        if self.kept.len() > MOST_FRAMES {
            let mut i = 0;
            self.kept.retain(|_| {
                i += 1;
                i % 2 == 1 || i == MOST_FRAMES + 1
            });
            self.chosen = self.chosen.map(|c| c / 2);
        }
    }

    /// Whether the slider shows an earlier step rather than training live.
    pub fn replaying(&self) -> bool {
        self.chosen.is_some()
    }

    /// Frames kept.
    pub fn count(&self) -> usize {
        self.kept.len()
    }

    /// The frame the slider shows (None: live), and its step.
    pub fn chosen(&self) -> Option<usize> {
        self.chosen
    }

    pub fn chosen_step(&self) -> Option<u64> {
        self.chosen.and_then(|c| self.kept.get(c)).map(|(s, _)| *s)
    }

    /// Shows frame `at`, or goes live at the last; returns what to draw (None: live).
    pub fn choose(&mut self, at: usize) -> Option<Shown> {
        let live = at + 1 >= self.kept.len();
        self.chosen = (!live).then_some(at);
        self.kept
            .get(at)
            .map(|(_, shown)| shown.clone())
            .filter(|_| !live)
    }
}
