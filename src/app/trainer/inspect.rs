//! The views of a model's insides, read back at each evaluation (and when the page chooses
//! something else to see), each in one transfer, and reported for the page to draw.

use super::Trainer;
use crate::app::grid::{argmax, grid_points, GRID, GRID_DIGITS, NEURON_GRID};
use crate::app::protocol::{CellView, DigitViews, PadView, Report, Tile, Views};
use crate::data::{Labelled, DIGIT_SIDE};
use crate::train::{ModelConfig, Session};

/// Digits of a confusion cell shown.
const CELL_DIGITS: usize = 12;

fn sentence(e: crate::Error) -> String {
    e.sentence()
}

impl Trainer {
    /// Every view of the current task, then the pad's drawing through the model if it is shown.
    pub(super) async fn redraw_views(&self) -> Result<(), String> {
        self.draw_views().await?;
        self.classify_pad().await
    }

    /// Every view of the current task.
    pub(super) async fn draw_views(&self) -> Result<(), String> {
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        let views = match (&session.config.model, session.labelled()) {
            (ModelConfig::Gpt(_), _) => match self.attention(session).await {
                Some(views) => views,
                None => return Ok(()),
            },
            (ModelConfig::Mlp(m), Some(data)) if data.classes == 2 => {
                plane(session, m.depth).await?
            }
            (_, Some(data)) => Views::Digits(self.digits(session, data).await?),
            (_, None) => return Ok(()),
        };
        if !self.stale() {
            self.report(Report::Views(views));
        }
        Ok(())
    }

    /// The digit grid, the confusion matrix and the chosen cell's digits, then (for a CNN) its
    /// filters and its feature maps for the chosen digit.
    async fn digits(&self, session: &Session, data: &Labelled) -> Result<DigitViews, String> {
        let probs = session
            .predict(data.val.x.clone(), data.val.len())
            .await
            .map_err(sentence)?;
        let predicted: Vec<u32> = probs.chunks(data.classes).map(argmax).collect();
        let tile = |i: usize| Tile {
            index: i,
            pixels: digit_pixels(data, i).to_vec(),
            truth: data.val.y[i],
            predicted: predicted[i],
        };
        let grid = (0..GRID_DIGITS.min(data.val.len())).map(tile).collect();
        let cell = self.choices.cell.map(|(t, p)| {
            let all: Vec<usize> = (0..predicted.len())
                .filter(|&i| data.val.y[i] as usize == t && predicted[i] as usize == p)
                .collect();
            CellView {
                at: (t, p),
                tiles: all.iter().take(CELL_DIGITS).map(|&i| tile(i)).collect(),
                count: all.len(),
            }
        });
        let mut views = DigitViews {
            grid,
            classes: data.classes,
            counts: confusion(data, &predicted),
            cell,
            filters: None,
            maps: None,
        };
        if !matches!(session.config.model, ModelConfig::Cnn(_)) {
            return Ok(views);
        }
        let filters = session
            .read_parameters(&["conv1.weight"])
            .await
            .map_err(sentence)?;
        views.filters = filters.into_iter().next();
        if self.choices.drawn && self.pad.is_some() {
            return Ok(views);
        }
        let i = self.choices.digit.unwrap_or(0).min(data.val.len() - 1);
        let mut insides = session
            .insides(digit_pixels(data, i).to_vec(), 1)
            .await
            .map_err(sentence)?;
        insides.pop();
        let which = format!(
            "test digit {} (a {}, read as {})",
            i + 1,
            data.val.y[i],
            predicted[i]
        );
        views.maps = Some((insides, which));
        Ok(views)
    }

    /// The attention map over the prompt; a prompt the model cannot read gets a sentence beside
    /// it instead (training goes on), and no views.
    async fn attention(&self, session: &Session) -> Option<Views> {
        let prompt = self.choices.prompt.clone();
        if prompt.is_empty() {
            // Nothing to attend over: an empty map, and no sentence.
            self.report(Report::PromptNote(None));
            return Some(Views::Attention {
                layers: Vec::new(),
                labels: Vec::new(),
            });
        }
        let read = match session.attention(&prompt).await {
            Ok(layers) => session.attention_labels(&prompt).map(|l| (layers, l)),
            Err(e) => Err(e),
        };
        match read {
            Ok((layers, labels)) => {
                self.report(Report::PromptNote(None));
                Some(Views::Attention { layers, labels })
            }
            Err(e) => {
                self.report(Report::PromptNote(Some(e.sentence())));
                None
            }
        }
    }

    /// The pad's drawing through the model: its probabilities and, for a CNN, what its layers
    /// make of it.
    pub(super) async fn classify_pad(&self) -> Result<(), String> {
        let (Some(session), Some(digit)) = (self.session.as_ref(), self.pad.clone()) else {
            return Ok(());
        };
        if session.labelled().is_none_or(|d| d.classes == 2) {
            return Ok(());
        }
        let mut maps = session.insides(digit.clone(), 1).await.map_err(sentence)?;
        let probs = maps.pop().map(|o| o.values).unwrap_or_default();
        if !self.stale() {
            self.report(Report::Pad(PadView { digit, probs, maps }));
        }
        Ok(())
    }
}

/// The 2-D classifier's views: P(class) over the plane, and its network diagram (its neurons
/// over a coarse grid of the plane, and its weights).
async fn plane(session: &Session, depth: usize) -> Result<Views, String> {
    let probs = session
        .predict(grid_points(GRID), GRID * GRID)
        .await
        .map_err(sentence)?;
    let g = NEURON_GRID;
    let neurons = session
        .insides(grid_points(g), g * g)
        .await
        .map_err(sentence)?;
    let names: Vec<String> = (0..=depth).map(|i| format!("layers.{i}.weight")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let weights = session.read_parameters(&names).await.map_err(sentence)?;
    Ok(Views::Plane {
        probs,
        neurons,
        weights,
    })
}

fn digit_pixels(data: &Labelled, i: usize) -> &[f32] {
    let side = DIGIT_SIDE * DIGIT_SIDE;
    &data.val.x[i * side..][..side]
}

/// counts[true × classes + predicted].
fn confusion(data: &Labelled, predicted: &[u32]) -> Vec<usize> {
    let k = data.classes;
    let mut counts = vec![0usize; k * k];
    for (t, p) in data.val.y.iter().zip(predicted) {
        counts[*t as usize * k + (*p as usize).min(k - 1)] += 1;
    }
    counts
}
