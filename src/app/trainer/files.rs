//! Files in and out of the run: the checkpoint (and a LoRA run's adapters or merged model)
//! offered as a download, and a checkpoint loaded into the run.

use super::Trainer;
use crate::app::protocol::{Bytes, Report, Saving};
use crate::train::{Checkpoint, ModelConfig};

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

    pub(super) async fn load(&mut self, bytes: &[u8]) -> Result<(), String> {
        let session = self
            .session
            .as_mut()
            .ok_or("Start a run first, then load a checkpoint into it.")?;
        let why = session.load(bytes).err().map(|e| e.sentence());
        let step = session.step;
        // Said beside the Load control too: on a phone it sits far below the error line.
        self.report(Report::Marks(vec![("load".into(), why.clone())]));
        if let Some(why) = why {
            return Err(format!("That file cannot be loaded: {why}"));
        }
        // A base model loaded under a LoRA run's adapters is what a new fine-tuning adapts.
        if let Some(base) = self.lora_base.as_mut().filter(|_| holds_base(bytes)) {
            base.checkpoint = bytes.to_vec();
        }
        // The file is a checkpoint on the CPU side already: resume from it if the GPU is lost.
        self.keep(bytes.to_vec(), step);
        self.report(Report::ClearError);
        self.report(Report::Loaded(step));
        self.evaluate(None, true).await
    }
}

/// Whether a checkpoint holds a GPT without adapters.
fn holds_base(bytes: &[u8]) -> bool {
    Checkpoint::parse(bytes).is_ok_and(|ck| {
        matches!(ck.config.model, ModelConfig::Gpt(_)) && ck.config.model.lora().is_none()
    })
}
