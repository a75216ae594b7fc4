//! The views of a model's insides, refreshed at each evaluation (and when a view is clicked):
//! each reads back what it shows once, computed on the session's device.

use super::{cnn_views, dom, network, text_views, views, with, Loop};
use crate::data::DIGIT_SIDE;
use crate::train::{ModelConfig, Session};

/// Test digits shown in the grid (three rows), and digits of a confusion cell shown.
const GRID_DIGITS: usize = 36;
const CELL_DIGITS: usize = 12;

impl Loop {
    /// Every view of the current task.
    pub(super) async fn draw_views(&self) -> Result<(), String> {
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        match &session.config.model {
            ModelConfig::Mlp(m) if session.labelled().is_some_and(|d| d.classes == 2) => {
                self.draw_predictions().await?;
                draw_network(session, m.depth).await
            }
            ModelConfig::Gpt(_) => {
                draw_attention(session).await;
                Ok(())
            }
            _ => self.draw_digits(session).await,
        }
    }

    /// The digit grid, the confusion matrix and the chosen cell's digits, then (for a CNN) its
    /// filters and its feature maps for the chosen digit.
    async fn draw_digits(&self, session: &Session) -> Result<(), String> {
        let (Some(predicted), Some(data)) = (self.draw_predictions().await?, session.labelled())
        else {
            return Ok(());
        };
        let (selected, chosen, drawn) = with(|s| (s.selected_digit, s.chosen_cell, s.drawn));
        let first: Vec<usize> = (0..GRID_DIGITS.min(data.val.len())).collect();
        views::draw_digits("digit-grid", data, &predicted, &first, selected);
        views::draw_confusion(data, &predicted, chosen);
        let cell = chosen.map(|c| views::cell_digits(data, &predicted, c, CELL_DIGITS));
        with(|s| s.cell_digits = cell.as_ref().map(|c| c.0.clone()).unwrap_or_default());
        dom::set_hidden("mistakes", cell.is_none());
        if let (Some((t, p)), Some((which, n))) = (chosen, cell) {
            views::draw_digits("mistake-grid", data, &predicted, &which, selected);
            dom::set_hidden("mistake-grid", n == 0);
            let caption = if n == 0 {
                format!("No test digit {t} was read as {p}.")
            } else if t == p {
                format!("Test digits {t} the model read right: {} of {n} shown. Click one to look inside.", which.len())
            } else {
                format!("Test digits {t} the model read as {p}: {} of {n} shown. Click one to look inside.", which.len())
            };
            dom::set_text("mistakes-caption", &caption);
        }
        if !matches!(session.config.model, ModelConfig::Cnn(_)) {
            return Ok(());
        }
        let filters = session
            .read_parameters(&["conv1.weight"])
            .await
            .map_err(|e| e.sentence())?;
        cnn_views::draw_filters(&filters[0]);
        if drawn {
            return Ok(());
        }
        let i = selected.unwrap_or(0).min(data.val.len() - 1);
        let image = data.val.x[i * DIGIT_SIDE * DIGIT_SIDE..][..DIGIT_SIDE * DIGIT_SIDE].to_vec();
        let insides = session.insides(image, 1).await.map_err(|e| e.sentence())?;
        let which = format!(
            "test digit {} (a {}, read as {})",
            i + 1,
            data.val.y[i],
            predicted[i]
        );
        cnn_views::draw_maps(&insides[..insides.len() - 1], &which);
        Ok(())
    }
}

/// The MLP's diagram: its neurons over a coarse grid of the plane, and its weights.
async fn draw_network(session: &Session, depth: usize) -> Result<(), String> {
    let g = network::NEURON_GRID;
    let insides = session
        .insides(views::grid_points(g), g * g)
        .await
        .map_err(|e| e.sentence())?;
    let names: Vec<String> = (0..=depth).map(|i| format!("layers.{i}.weight")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let weights = session
        .read_parameters(&names)
        .await
        .map_err(|e| e.sentence())?;
    network::draw(&insides, &weights);
    Ok(())
}

/// The attention map over the prompt; a prompt the model cannot read gets a sentence beside
/// it instead (training goes on).
async fn draw_attention(session: &Session) {
    let prompt = dom::value("prompt");
    if prompt.is_empty() {
        // Nothing to attend over: an empty map, and no sentence.
        let _ = dom::sharp("attention");
        dom::note_beside("prompt", None);
        return;
    }
    match session.attention(&prompt).await {
        Ok(layers) => {
            dom::note_beside("prompt", None);
            let chars: Vec<char> = prompt.chars().collect();
            text_views::draw_attention(&layers, &chars);
        }
        Err(e) => dom::note_beside("prompt", Some(&e.sentence())),
    }
}
