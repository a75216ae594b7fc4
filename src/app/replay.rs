//! Replaying a run: the page keeps what the output view showed at the steps it was read (the
//! boundary's probabilities, the test digits' guesses), and the replay slider draws any of
//! them again. At its right end the slider follows training live.

use super::protocol::{Tile, Views};
use super::shared::with;
use super::{dom, views};

/// Frames kept per run: when full, every other one is dropped, so the run's whole length
/// stays covered at half the density.
const MOST_FRAMES: usize = 240;

/// What the output view showed at one step.
#[derive(Clone)]
enum Shown {
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

    fn add(&mut self, step: u64, shown: Shown) {
        if self.kept.last().is_some_and(|(s, _)| *s >= step) {
            // Read again at the same step (a choice in the views): the newer replaces it.
            self.kept.retain(|(s, _)| *s < step);
        }
        self.kept.push((step, shown));
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
}

/// Keeps the output of fresh views read at `step`, and moves the slider's end along.
pub fn keep(step: u64, latest: &Views) {
    let shown = match latest {
        Views::Plane { probs, .. } => Shown::Plane(probs.clone()),
        Views::Digits(d) => Shown::Digits(d.grid.clone()),
        Views::Attention { .. } => return,
    };
    with(|s| s.frames.add(step, shown));
    show_slider();
}

/// The slider's range and place, and the step it shows.
pub fn show_slider() {
    let (count, chosen, step) = with(|s| {
        let f = &s.frames;
        let step = f.chosen.and_then(|c| f.kept.get(c)).map(|(s, _)| *s);
        (f.kept.len(), f.chosen, step)
    });
    if let Some(slider) = dom::by_id::<web_sys::HtmlInputElement>("replay") {
        let last = count.saturating_sub(1);
        slider.set_max(&last.to_string());
        slider.set_value(&chosen.unwrap_or(last).to_string());
    }
    let label = match step {
        Some(step) => format!("step {step}"),
        None => "live".to_string(),
    };
    dom::set_text("replay-step", &label);
}

/// The slider moved to frame `at`: draws that frame, or goes live at the right end.
pub fn choose(at: usize) {
    let frame = with(|s| {
        let f = &mut s.frames;
        let live = at + 1 >= f.kept.len();
        f.chosen = (!live).then_some(at);
        f.kept.get(at).map(|(_, shown)| shown.clone()).filter(|_| !live)
    });
    show_slider();
    match frame {
        Some(shown) => draw(&shown),
        None => super::redraw::views(),
    }
}

fn draw(shown: &Shown) {
    match shown {
        Shown::Plane(probs) => {
            let show = (dom::checked("show-train"), dom::checked("show-test"));
            with(|s| {
                if let Some(points) = &s.points {
                    views::draw_boundary(probs, points, show);
                }
            });
        }
        Shown::Digits(grid) => {
            let selected = with(|s| s.selected_digit);
            views::draw_digits("digit-grid", grid, selected);
        }
    }
}
