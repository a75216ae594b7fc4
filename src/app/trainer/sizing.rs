//! Sizing the GPT to the user's GPU: on Reset with the size on auto, time a few steps of each
//! preset from the smallest up and keep the largest that trains at a visible pace.

use super::{now_ms, schema, Trainer};
use crate::app::protocol::Report;
use crate::nn::Preset;
use crate::train::{Config, ModelConfig, Task};

/// Steps per second below which the loss curve moves too slowly to watch.
const VISIBLE_PACE: f32 = 15.0;
/// Steps recorded between waits while timing a preset (about a frame's worth of the page's loop).
const MEASURED_STEPS: u32 = 5;
/// Wall time spent timing each preset: enough steps that a slow first one does not dominate.
const MEASURE_MS: f64 = 300.0;
/// A larger preset is timed only if the smaller one's rate, scaled by their work per step,
/// predicts at least this share of the visible pace: fixed per-step costs make small models
/// slower than their work alone says, so the prediction errs low.
const WORTH_TIMING: f32 = 0.5;

/// The presets, smallest first.
const SIZES: [Preset; 3] = [Preset::Tiny, Preset::Small, Preset::Nanochar];

/// A vocabulary for estimating work: the built-in text's 84 characters. The embedding's share
/// of the work is small, so a user's own text with another vocabulary changes little.
const TYPICAL_VOCAB: usize = 84;

/// Multiply-adds of a training step of a preset's GPT, roughly: weights times tokens.
fn step_work(preset: Preset) -> f32 {
    let Ok(config) = Config::defaults(Task::Text, None, Some(preset), TYPICAL_VOCAB) else {
        return f32::INFINITY;
    };
    let ModelConfig::Gpt(g) = &config.model else {
        return f32::INFINITY;
    };
    let weights = 12 * g.layers * g.width * g.width + (g.vocab + g.context) * g.width;
    (weights * config.batch * g.context) as f32
}

/// What the sizing found: the preset kept and its rate, and the next one up, if any, with its
/// rate (timed, or predicted when it was not worth timing).
struct Sizing {
    /// Where it was measured: "this GPU", or the CPU backend.
    on: &'static str,
    kept: (Preset, f32),
    next: Option<(Preset, f32, bool)>,
}

impl Sizing {
    fn sentence(&self) -> String {
        let (kept, rate) = self.kept;
        let mut s = format!(
            "Sized to {}: {kept} trains at {} here.",
            self.on,
            pace(rate)
        );
        // Short: it sits in the page's one line of sentences; the size control overrides it.
        match self.next {
            Some((next, rate, _)) if rate < VISIBLE_PACE => {
                s += &format!(" {next} would be slower than {VISIBLE_PACE:.0} a second.")
            }
            _ => {}
        }
        s
    }
}

/// A rate of steps as a person says it: "12 steps a second", or "a step every 2.5 seconds"
/// below about one a second (not "1 steps a second").
fn pace(rate: f32) -> String {
    if rate >= 1.5 {
        format!("{rate:.0} steps a second")
    } else {
        format!("a step every {:.1} seconds", 1.0 / rate.max(1e-3))
    }
}

impl Trainer {
    /// Times the presets from the smallest up, puts the largest that keeps a visible pace in
    /// the plan's settings (and the page's controls), and returns a sentence saying which and
    /// why.
    pub(super) async fn autosize(&mut self) -> Result<String, String> {
        let mut kept: Option<(Preset, f32)> = None;
        let mut next = None;
        for preset in SIZES {
            if let Some((smaller, rate)) = kept {
                let predicted = rate * step_work(smaller) / step_work(preset);
                if predicted < VISIBLE_PACE * WORTH_TIMING {
                    next = Some((preset, predicted, false));
                    break;
                }
            }
            self.use_preset(preset);
            self.build_session(Task::Text).await?;
            let rate = self.steps_per_second().await?;
            if kept.is_some() && rate < VISIBLE_PACE {
                next = Some((preset, rate, true));
                break;
            }
            kept = Some((preset, rate));
            if rate < VISIBLE_PACE {
                break;
            }
        }
        let kept = kept.ok_or("There is no GPT size to try.")?;
        self.use_preset(kept.0);
        self.report(Report::Preset(kept.0));
        let on = match self.session.as_ref().map(|s| s.device()) {
            Some(crate::Device::Gpu(_)) => "this GPU",
            _ => "the CPU backend",
        };
        Ok(Sizing { on, kept, next }.sentence())
    }

    fn use_preset(&mut self, preset: Preset) {
        if let Some(plan) = self.plan.as_mut() {
            plan.form.set_all(schema::preset_values(preset));
        }
    }

    /// The session's training rate as the page's loop sees it: two untimed steps (they build
    /// the pipelines and fill the buffer pool) and its product shapes timed, then steps
    /// `MEASURED_STEPS` at a time, each group waited for, until `MEASURE_MS` have passed. Five
    /// steps alone measured a quarter of the small preset's rate in Chrome on an H100 (42 steps
    /// a second against 155).
    async fn steps_per_second(&mut self) -> Result<f32, String> {
        let session = self.session.as_mut().ok_or("No session to time.")?;
        let err = |e: crate::Error| e.sentence();
        for _ in 0..2 {
            session.train_step().map_err(err)?;
        }
        session.check().await.map_err(err)?;
        // Timed as it will train: its product shapes on their fastest variants.
        super::scope::time_products(session.device()).await;
        let (start, mut steps) = (now_ms(), 0);
        while steps == 0 || now_ms() - start < MEASURE_MS {
            for _ in 0..MEASURED_STEPS {
                session.train_step().map_err(err)?;
            }
            session.check().await.map_err(err)?;
            steps += MEASURED_STEPS;
        }
        let seconds = ((now_ms() - start) / 1000.0).max(1e-3) as f32;
        Ok(steps as f32 / seconds)
    }
}
