//! What the page shows of a session: the stats line and the charts, the views of what the
//! model predicts, samples of text and the pad's guess.

use super::{charts, dom, now_ms, views, with, Loop};
use crate::train::SampleSettings;

impl Loop {
    pub(super) fn show_stats(&self) {
        let rate = self.rate;
        let per_step = self.session.as_ref().map_or(1, |s| s.items_per_step()) as f32;
        let text_task = self.session.as_ref().is_some_and(|s| s.text().is_some());
        let elapsed = self.trained_ms;
        let (text, history) = with(|s| {
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
            (t, s.history.clone())
        });
        dom::set_text("stats", &text);
        charts::draw(
            &history,
            dom::checked("log-scale"),
            dom::value("smoothing").parse().unwrap_or(0.8),
        );
    }

    pub(super) async fn draw_views(&self) -> Result<(), String> {
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        let Some(data) = session.labelled() else {
            return Ok(());
        };
        if data.classes == 2 {
            let probs = session
                .predict(views::grid_points(), views::GRID * views::GRID)
                .await
                .map_err(|e| e.sentence())?;
            views::draw_boundary(&probs, data);
        } else {
            let probs = session
                .predict(data.val.x.clone(), data.val.len())
                .await
                .map_err(|e| e.sentence())?;
            let predicted: Vec<u32> = probs.chunks(data.classes).map(argmax).collect();
            views::draw_digits(data, &predicted, 36);
            views::draw_confusion(data, &predicted);
        }
        Ok(())
    }

    pub(super) async fn sample(&self) -> Result<(), String> {
        let session = self.session.as_ref().ok_or("Start a run first.")?;
        let settings = SampleSettings {
            prompt: dom::value("prompt"),
            tokens: 300,
            temperature: dom::value("temperature")
                .parse()
                .map_err(|_| "The temperature is not a number.")?,
            top_k: dom::value("top-k")
                .parse()
                .map_err(|_| "Top-k is not a whole number.")?,
            seed: now_ms() as u64,
        };
        let mut text = settings.prompt.clone();
        dom::set_text("sample-out", &text);
        session
            .sample(&settings, |t| {
                text.push_str(t);
                dom::set_text("sample-out", &text);
            })
            .await
            .map_err(|e| e.sentence())?;
        Ok(())
    }

    pub(super) async fn classify_pad(&self) -> Result<(), String> {
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        let Some(pixels) = views::pad_pixels() else {
            dom::set_text("pad-guess", views::PAD_PROMPT);
            return Ok(());
        };
        let probs = session.predict(pixels, 1).await.map_err(|e| e.sentence())?;
        if views::pad_pixels().is_none() {
            // Cleared while the model looked: the guess would be about nothing.
            return Ok(());
        }
        let best = argmax(&probs);
        dom::set_text(
            "pad-guess",
            &format!(
                "I think it is a {best} ({:.0}% sure).",
                100.0 * probs[best as usize]
            ),
        );
        Ok(())
    }
}

fn argmax(p: &[f32]) -> u32 {
    p.iter()
        .enumerate()
        .fold(0, |b, (i, v)| if *v > p[b] { i } else { b }) as u32
}
