//! Replaying a run: the page keeps what the output view showed at the steps it was read (the
//! boundary's probabilities, the test digits' guesses), and the replay slider draws any of
//! them again. At its right end the slider follows training live.

use super::frames::Shown;
use super::protocol::Views;
use super::shared::with;
use super::{dom, views};

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
        (f.count(), f.chosen(), f.chosen_step())
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
    let frame = with(|s| s.frames.choose(at));
    show_slider();
    match frame {
        Some(shown) => draw(&shown),
        None => super::redraw::views(),
    }
}

fn draw(shown: &Shown) {
    match shown {
        Shown::Plane(probs) => super::redraw::boundary(probs),
        Shown::Digits(grid) => {
            let selected = with(|s| s.selected_digit);
            views::draw_digits("digit-grid", grid, selected);
        }
    }
}
