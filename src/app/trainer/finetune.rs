//! LoRA fine-tuning in the page: the model as it stands (trained here or loaded) becomes the
//! frozen base of a new session that trains only low-rank adapters on the user's text. The
//! base's own text stays beside it for a second validation loss, so that the chart shows what
//! the model learns of the new text and what it forgets of the old, and a sample taken before
//! the first step is kept to compare with the samples after.

use super::{built, Trainer};
use crate::app::protocol::{FineTune, Report};
use crate::data::Text;
use crate::nn::LoraConfig;
use crate::train::{Config, ModelConfig, Session, TaskData};

/// Characters of the sample taken before fine-tuning (fewer than a Sample's: it holds up the
/// start of the run).
const BEFORE_CHARS: usize = 200;

/// What a LoRA run adapts: the base model's checkpoint, settings and text.
pub(super) struct Base {
    pub(super) checkpoint: Vec<u8>,
    config: Config,
    pub(super) text: Text,
}

impl Trainer {
    /// Replaces the session with a LoRA fine-tuning of its model on `ask.text`. A LoRA run
    /// being fine-tuned again starts from the same base, not from its adapted model.
    pub(super) async fn fine_tune(&mut self, ask: FineTune) -> Result<(), String> {
        self.run = ask.run;
        let adapting = self.adapting();
        let base = match self.lora_base.take() {
            Some(base) if adapting => base,
            _ => self.base_of_session().await?,
        };
        let started = self.adapted(&base, &ask).await;
        let replaced = started.is_ok() && !self.stale();
        // The base stays with the session that adapts it: the new one, or a LoRA run whose new
        // fine-tuning failed or was overtaken by a Reset.
        if replaced || adapting {
            self.lora_base = Some(base);
        }
        let (session, before) = started?;
        if !replaced {
            return Ok(());
        }
        let on_cpu = !session.device().is_gpu();
        self.begin(session);
        self.sampler = None;
        let Some(session) = &self.session else {
            return Ok(());
        };
        let trainable = session.parameter_count();
        let mut note = format!(
            "Fine-tuning with LoRA of rank {}: {trainable} adapter weights train on your text while the model's own stay frozen. The second validation curve is the loss on the text the model learnt before.",
            ask.rank
        );
        if on_cpu {
            note += " (On the CPU, as the model was.)";
        }
        self.report(Report::Built(built_lora(session, note, ask.rank)));
        self.report(Report::BaseSample(before));
        self.evaluate(None, true).await
    }

    /// Whether the session trains LoRA adapters.
    fn adapting(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| s.config.model.lora().is_some())
    }

    /// The session's model as the base of a fine-tuning: a text GPT's checkpoint, settings
    /// and text.
    async fn base_of_session(&self) -> Result<Base, String> {
        let session = self
            .session
            .as_ref()
            .filter(|s| s.text().is_some())
            .ok_or("Train (or load) a text model first: LoRA fine-tunes a GPT.")?;
        let checkpoint = session.save().await.map_err(|e| e.sentence())?;
        Ok(Base {
            checkpoint,
            config: session.config.clone(),
            text: session.text().cloned().expect("filtered above"),
        })
    }

    /// A new session of the base's model with adapters of `ask.rank` on `ask.text`, the base's
    /// weights loaded under them, on the device the session trains on; and what it writes
    /// before its first step (the base's sample, since the adapters start at zero).
    async fn adapted(&self, base: &Base, ask: &FineTune) -> Result<(Session, String), String> {
        let text = Text::read_with(&ask.text, base.text.tokenizer.clone()).map_err(|e| {
            self.report(Report::Marks(vec![(
                "user-text".into(),
                Some(e.sentence()),
            )]));
            format!("Your text cannot be fine-tuned on: {}", e.sentence())
        })?;
        self.report(Report::Marks(vec![("user-text".into(), None)]));
        let mut config = base.config.clone();
        if let ModelConfig::Gpt(g) = &mut config.model {
            let rank = ask.rank;
            g.lora = Some(LoraConfig {
                rank,
                alpha: rank as f32,
            });
        }
        let device = self.session.as_ref().map_or(&self.device, |s| s.device());
        let mut session = Session::new(config, TaskData::Text(text), device)
            .map_err(|e| format!("The fine-tuning cannot start: {}", e.sentence()))?;
        session
            .load(&base.checkpoint)
            .map_err(|e| format!("The fine-tuning cannot start: {}", e.sentence()))?;
        let before = session
            .sample(&before_settings(ask), |_| ())
            .await
            .map_err(|e| e.sentence())?;
        Ok((session, before))
    }
}

/// The sample settings of the page, shortened for the sample before fine-tuning.
fn before_settings(ask: &FineTune) -> crate::train::SampleSettings {
    let mut settings = ask.sample.clone();
    settings.tokens = settings.tokens.min(BEFORE_CHARS);
    settings
}

fn built_lora(session: &Session, note: String, rank: usize) -> crate::app::protocol::Built {
    let mut b = built(session, Some(note));
    b.lora = Some(rank);
    b
}
