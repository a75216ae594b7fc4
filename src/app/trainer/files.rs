//! Files in and out of the run: the checkpoint (and a LoRA run's adapters or merged model)
//! offered as a download, and a checkpoint loaded into the run.

use super::finetune::BaseWeights;
use super::{built, Trainer, PAGE_EVAL_CHARS};
use crate::app::protocol::{Bytes, Report, Saving};
use crate::data::{Text, Tokenizer};
use crate::train::{is_hf_gpt2, Checkpoint, ModelConfig, Session, TaskData};

impl Trainer {
    /// Offers the run as a download: the checkpoint, or a LoRA run's adapters or merged model.
    pub(super) async fn save(&self, what: Saving) -> Result<(), String> {
        let session = self
            .session
            .as_ref()
            .ok_or("There is nothing to save yet.")?;
        let bytes = match what {
            Saving::Checkpoint => session.save().await,
            Saving::Adapters => session.save_adapters().await,
            Saving::Merged => session.save_merged().await,
        }
        .map_err(|e| e.sentence())?;
        if session.is_gpt2() && what != Saving::Checkpoint {
            return self.save_for_hugging_face(session, what, bytes);
        }
        let kind = match what {
            Saving::Checkpoint => "",
            Saving::Adapters => "-lora-adapters",
            Saving::Merged => "-lora-merged",
        };
        let (task, step) = (session.config.task, session.step);
        self.report(Report::Saved {
            bytes: Bytes(bytes),
            name: format!("webgrad-{task}-step{step}{kind}.safetensors"),
        });
        Ok(())
    }

    /// A GPT-2's adapters or merged model as the files PEFT or transformers read from a
    /// folder, under their names: the weights, and the settings beside them.
    fn save_for_hugging_face(
        &self,
        session: &Session,
        what: Saving,
        bytes: Vec<u8>,
    ) -> Result<(), String> {
        let (weights, settings, json) = match what {
            Saving::Adapters => (
                "adapter_model.safetensors",
                "adapter_config.json",
                session.peft_config().map_err(|e| e.sentence())?,
            ),
            _ => (
                "model.safetensors",
                "config.json",
                session.merged_config_json().unwrap_or_default(),
            ),
        };
        for (name, bytes) in [(weights, bytes), (settings, json.into_bytes())] {
            self.report(Report::Saved {
                bytes: Bytes(bytes),
                name: name.to_string(),
            });
        }
        Ok(())
    }

    /// Loads a checkpoint into the run; one of another task or another model becomes a new
    /// run of its own settings (its task, sizes and vocabulary), which the page then shows.
    pub(super) async fn load(&mut self, bytes: &[u8]) -> Result<(), String> {
        if is_hf_gpt2(bytes) {
            let adopted = self.adopt_gpt2(bytes).await;
            let why = adopted.as_ref().err().cloned();
            let marks = ["load", "gpt2-file"].map(|id| (id.to_string(), why.clone()));
            self.report(Report::Marks(marks.to_vec()));
            if adopted.is_ok() {
                self.report(Report::ClearError);
            }
            return adopted.map_err(|why| format!("That file cannot be loaded: {why}"));
        }
        let session = self
            .session
            .as_mut()
            .ok_or("Start a run first, then load a checkpoint into it.")?;
        let parsed = Checkpoint::parse(bytes);
        let refused = match &parsed {
            Ok(ck) => session.load_parsed(ck).err(),
            Err(e) => Some(e.clone()),
        };
        let mut why = refused.map(|e| e.sentence());
        let note = parsed.as_ref().ok().and_then(|ck| ck.state_note());
        if why.is_some() {
            if let Some(ck) = parsed.ok().filter(|ck| self.other_model(ck)) {
                why = self.adopt(ck, bytes).await.err();
            }
        }
        let Some(session) = self.session.as_ref() else {
            return Ok(());
        };
        let step = session.step;
        // Said beside the Load control too: on a phone it sits far below the error line.
        self.report(Report::Marks(vec![("load".into(), why.clone())]));
        if let Some(why) = why {
            return Err(format!("That file cannot be loaded: {why}"));
        }
        // A base model loaded under a LoRA run's adapters is what a new fine-tuning adapts.
        if let Some(base) = self.lora_base.as_mut().filter(|_| holds_base(bytes)) {
            base.weights = BaseWeights::Checkpoint(bytes.to_vec());
        }
        // The figures of the weights it replaced are not this model's.
        self.best = crate::train::BestKeeper::new(None);
        self.evals.clear();
        // The file is a checkpoint on the CPU side already: resume from it if the GPU is lost.
        self.keep(bytes.to_vec(), step);
        self.report(Report::ClearError);
        self.report(Report::Loaded(step));
        if let Some(note) = note {
            self.report(Report::Note(Some(format!("That file loaded, but {note}."))));
        }
        self.evaluate(None, true).await
    }
}

impl Trainer {
    /// Whether a checkpoint holds another task's model, or a model of other settings.
    fn other_model(&self, ck: &Checkpoint) -> bool {
        self.session
            .as_ref()
            .is_some_and(|s| s.config.task != ck.config.task || s.config.model != ck.config.model)
    }

    /// Replaces the session with one of the checkpoint's own settings, its weights loaded;
    /// the page is told the settings, then shown the new run.
    async fn adopt(&mut self, ck: Checkpoint, bytes: &[u8]) -> Result<(), String> {
        let mut config = ck.config.clone();
        let data = self.data(config.task, config.noise, config.seed).await?;
        let data = match (data, ck.tokenizer) {
            (TaskData::Text(text), Some(t)) => TaskData::Text(in_vocab(&text, t)?),
            (data, _) => data,
        };
        config.eval_every = self.session.as_ref().map_or(25, |s| s.config.eval_every);
        config.eval_chars = PAGE_EVAL_CHARS;
        let mut session =
            Session::new(config.clone(), data, &self.device).map_err(|e| e.sentence())?;
        session.load(bytes).map_err(|e| e.sentence())?;
        self.begin(session);
        self.lora_base = None;
        self.sampler = None;
        self.report(Report::Adopted(config.clone()));
        if let Some(session) = &self.session {
            let mut made = built(session, None);
            made.lora = config.model.lora().map(|l| l.rank);
            self.report(Report::Built(made));
        }
        Ok(())
    }
}

/// A text encoded with a checkpoint's vocabulary: the text the page trains on (Shakespeare, or
/// the user's own), which must use only characters the checkpoint's model knows.
fn in_vocab(text: &Text, tokenizer: Tokenizer) -> Result<Text, String> {
    text.retokenized(tokenizer).map_err(|e| {
        format!(
            "its model was trained on another text ({}). Train a model from scratch on that text first, then load the file.",
            e.sentence().trim_end_matches('.')
        )
    })
}

/// Whether a checkpoint holds a GPT without adapters.
fn holds_base(bytes: &[u8]) -> bool {
    Checkpoint::parse(bytes).is_ok_and(|ck| {
        matches!(ck.config.model, ModelConfig::Gpt(_)) && ck.config.model.lora().is_none()
    })
}
