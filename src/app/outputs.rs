//! What the page shows of a session: the stats line and the charts, the views of what the
//! model predicts, and the pad's guess.

use super::{charts, dom, flow_chart, pad, views, with, Loop};

impl Loop {
    pub(super) fn show_stats(&self) {
        let rate = self.rate;
        let per_step = self.session.as_ref().map_or(1, |s| s.items_per_step()) as f32;
        let text_task = self.session.as_ref().is_some_and(|s| s.text().is_some());
        let elapsed = self.trained_ms;
        let (text, history, flows, overlays) = with(|s| {
            s.status.steps_per_s = rate;
            let st = &s.status;
            let mut t = format!("step {}", st.step);
            if let Some(l) = st.train_loss {
                t += &format!(" · train loss {l:.3}");
            }
            if let Some(l) = st.val_loss {
                t += &format!(" · val loss {l:.3}");
            }
            if let Some(a) = st.val_acc {
                t += &format!(" · val acc {:.1}%", 100.0 * a);
            }
            if let Some(r) = rate {
                t += &format!(" · {r:.1} steps/s");
                if text_task {
                    t += &format!(" · {:.0} tokens/s", r * per_step);
                }
            }
            t += &format!(" · {:.0} s", elapsed / 1000.0);
            (t, s.history.clone(), s.flows.clone(), s.overlays.clone())
        });
        dom::set_text("stats", &text);
        charts::draw(
            &history,
            &overlays,
            dom::checked("log-scale"),
            dom::value("smoothing").parse().unwrap_or(0.8),
        );
        flow_chart::draw(&flows);
    }

    /// The pad's drawing through the model: its guess, the input it sees, its probabilities
    /// and, in the feature-map view, what its layers make of it.
    pub(super) async fn classify_pad(&self) -> Result<(), String> {
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        let Some(digit) = pad::pad_digit() else {
            dom::set_text("pad-guess", pad::PAD_PROMPT);
            return Ok(());
        };
        let insides = session
            .insides(digit.clone(), 1)
            .await
            .map_err(|e| e.sentence())?;
        if pad::pad_digit().is_none() {
            // Cleared while the model looked: the guess would be about nothing.
            return Ok(());
        }
        let (maps, output) = insides.split_at(insides.len() - 1);
        let probs = &output[0].values;
        let best = argmax(probs);
        let sure = 100.0 * probs[best as usize];
        dom::set_text(
            "pad-guess",
            &format!("I think it is a {best} ({sure:.0}% sure)."),
        );
        pad::show(&digit, probs);
        super::cnn_views::draw_maps(maps, "your drawing");
        with(|s| s.drawn = true);
        Ok(())
    }

    /// Refreshes the views of the latest evaluation (after a click in one of them).
    pub(super) async fn redraw_views(&self) -> Result<(), String> {
        self.draw_views().await?;
        if with(|s| s.drawn) {
            self.classify_pad().await?;
        }
        Ok(())
    }

    /// Test points or the test digits, as the model now predicts them.
    pub(super) async fn draw_predictions(&self) -> Result<Option<Vec<u32>>, String> {
        let Some(session) = self.session.as_ref() else {
            return Ok(None);
        };
        let Some(data) = session.labelled() else {
            return Ok(None);
        };
        if data.classes == 2 {
            let grid = views::grid_points(views::GRID);
            let probs = session
                .predict(grid, views::GRID * views::GRID)
                .await
                .map_err(|e| e.sentence())?;
            let show = (dom::checked("show-train"), dom::checked("show-test"));
            views::draw_boundary(&probs, data, show);
            return Ok(None);
        }
        let probs = session
            .predict(data.val.x.clone(), data.val.len())
            .await
            .map_err(|e| e.sentence())?;
        Ok(Some(probs.chunks(data.classes).map(argmax).collect()))
    }
}

pub(super) fn argmax(p: &[f32]) -> u32 {
    p.iter()
        .enumerate()
        .fold(0, |b, (i, v)| if *v > p[b] { i } else { b }) as u32
}
