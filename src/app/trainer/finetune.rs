//! LoRA fine-tuning in the page: the model as it stands (trained here or loaded) becomes the
//! frozen base of a new session that trains only low-rank adapters on the user's text. The
//! base's own text stays beside it for a second validation loss, so that the chart shows what
//! the model learns of the new text and what it forgets of the old, and a sample taken before
//! the first step is kept to compare with the samples after.

use super::{built, Trainer};
use crate::app::protocol::{FineTune, Report};
use crate::data::{Text, Tokenizer};
use crate::nn::LoraConfig;
use crate::train::{Config, HfGpt2, ModelConfig, SampleSettings, Session, TaskData};

/// Characters of the sample taken before fine-tuning (fewer than a Sample's: it holds up the
/// start of the run).
const BEFORE_CHARS: usize = 200;

/// The weights a LoRA run adapts: a checkpoint's bytes, or a GPT-2 file read.
pub(super) enum BaseWeights {
    Checkpoint(Vec<u8>),
    Gpt2(HfGpt2),
}

/// What a LoRA run adapts: the base model's weights, settings and tokenizer, and the text it
/// learnt before, for the second validation curve (none for a GPT-2 just loaded, whose own
/// text is not here: once it is fine-tuned on another, the text it was loaded on).
pub(super) struct Base {
    pub(super) weights: BaseWeights,
    pub(super) config: Config,
    pub(super) text: Option<Text>,
    pub(super) tokenizer: Tokenizer,
}

impl Trainer {
    /// Replaces the session with a LoRA fine-tuning of its model on `ask.text`. A LoRA run
    /// being fine-tuned again starts from the same base, not from its adapted model.
    pub(super) async fn fine_tune(&mut self, ask: FineTune) -> Result<(), String> {
        self.run = ask.run;
        let adapting = self.adapting();
        let mut base = match self.lora_base.take() {
            Some(base) if adapting => base,
            _ => self.base_of_session().await?,
        };
        // A GPT-2 fine-tuned on a new text: the text it was loaded on gives the second curve.
        if base.text.is_none() {
            base.text = self.session.as_ref().and_then(|s| s.text().cloned());
        }
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
        let text = session.text().cloned().expect("filtered above");
        Ok(Base {
            weights: BaseWeights::Checkpoint(checkpoint),
            config: session.config.clone(),
            tokenizer: text.tokenizer.clone(),
            text: Some(text),
        })
    }

    /// A new session of the base's model with adapters of `ask.rank` on `ask.text`, the base's
    /// weights loaded under them, on the device the session trains on; and what it writes
    /// before its first step (the base's sample, since the adapters start at zero).
    async fn adapted(&self, base: &Base, ask: &FineTune) -> Result<(Session, String), String> {
        let text = Text::read_with(&ask.text, base.tokenizer.clone()).map_err(|e| {
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
        let mut session = Session::for_base(config, TaskData::Text(text), device)
            .map_err(|e| format!("The fine-tuning cannot start: {}", e.sentence()))?;
        let loaded = match &base.weights {
            BaseWeights::Checkpoint(bytes) => session.load(bytes),
            BaseWeights::Gpt2(file) => session.load_gpt2_base(file),
        };
        loaded.map_err(|e| format!("The fine-tuning cannot start: {}", e.sentence()))?;
        let before = session
            .sample(&before_settings(&ask.sample), |_| ())
            .await
            .map_err(|e| e.sentence())?;
        Ok((session, before))
    }
}

/// The sample settings of the page, shortened for the sample before fine-tuning.
pub(super) fn before_settings(sample: &SampleSettings) -> SampleSettings {
    SampleSettings {
        tokens: sample.tokens.min(BEFORE_CHARS),
        ..sample.clone()
    }
}

fn built_lora(session: &Session, note: String, rank: usize) -> crate::app::protocol::Built {
    let mut b = built(session, Some(note));
    b.lora = Some(rank);
    b
}
