//! GPT-2 in the page: Hugging Face's `model.safetensors` of GPT-2 (loaded from the disk, never
//! uploaded) becomes the frozen base of a LoRA run on the page's text, read as GPT-2's tokens.
//! Its size is checked against the device before anything is allocated; it writes with its
//! own weights from the start (the adapters begin at zero: a sample of that is kept to compare)
//! and Train fine-tunes it.

use super::finetune::{before_settings, Base, BaseWeights};
use super::{built, Trainer, PAGE_EVAL_CHARS};
use crate::app::protocol::Report;
use crate::data::Tokenizer;
use crate::nn::LoraConfig;
use crate::train::{Config, Footprint, HfGpt2, Session, Task, TaskData, GPT2_STEPS};
use crate::Device;

/// The adapters' rank when GPT-2 is loaded (the rank control changes it at Fine-tune).
const GPT2_RANK: usize = 8;

impl Trainer {
    /// Replaces the run with a LoRA fine-tuning of the GPT-2 in `bytes` on the page's text.
    pub(super) async fn adopt_gpt2(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.report(Report::Busy(Some("Reading GPT-2's weights".into())));
        let file = HfGpt2::parse(bytes, None).map_err(|e| e.sentence())?;
        let lora = LoraConfig {
            rank: GPT2_RANK,
            alpha: GPT2_RANK as f32,
        };
        let mut config =
            Config::gpt2_lora(&file.config, lora, GPT2_STEPS).map_err(|e| e.sentence())?;
        config.eval_every = self.session.as_ref().map_or(25, |s| s.config.eval_every);
        config.eval_chars = PAGE_EVAL_CHARS;
        // A tab's GPU memory is what the laptop lends it: GPT-2's blocks run again in backward
        // (natively on an H200, 1.01 GB instead of 2.67 in f32, for a step a third longer).
        config.recompute = true;
        // Said before the text is read: a model too large for this GPU is refused at once. Its
        // base as the session will hold it: in f16 where products are (0.27 GB less).
        let footprint = Footprint::of(&Config {
            frozen_f16: matches!(&self.device, Device::Gpu(g) if g.frozen_f16()),
            ..config.clone()
        });
        footprint
            .check(&self.device)
            .map_err(|e| format!("GPT-2 does not fit on this GPU: {} A smaller GPT-2 may: distilgpt2's model.safetensors is 353 MB.", e.sentence()))?;
        self.report(Report::Busy(Some(
            "Reading the text as GPT-2's tokens".into(),
        )));
        let text = match self.data(Task::Text, config.noise, config.seed).await? {
            TaskData::Text(t) => t.retokenized(Tokenizer::Gpt2).map_err(|e| e.sentence())?,
            TaskData::Labelled(_) => return Err("The text task reads no text.".into()),
        };
        let model = footprint.model_in_words();
        self.report(Report::Busy(Some(format!(
            "Putting GPT-2 ({model}) on the GPU"
        ))));
        let mut session =
            Session::for_base(config.clone(), TaskData::Text(text.clone()), &self.device)
                .map_err(|e| format!("GPT-2 cannot start here: {}", e.sentence()))?;
        session.load_gpt2_base(&file).map_err(|e| e.sentence())?;
        self.begin(session);
        self.sampler = None;
        self.lora_base = Some(Base {
            weights: BaseWeights::Gpt2(file),
            config: config.clone(),
            text: None,
            tokenizer: Tokenizer::Gpt2,
        });
        self.report(Report::Adopted(config));
        if let Some(session) = &self.session {
            let note = format!(
                "GPT-2 loaded: {model}, writing with its own weights. Train fine-tunes it on this text with LoRA of rank {GPT2_RANK} ({} adapter weights), its own frozen.",
                session.parameter_count()
            );
            let mut made = built(session, Some(note));
            made.lora = Some(GPT2_RANK);
            self.report(Report::Built(made));
        }
        // The load's phases each start from an emptied pool: the free buffers of the sample
        // before, of the first evaluation and of the first steps together held 704 MB at the
        // first report, where a step alone holds 671.
        self.sample_before().await?;
        self.device.release_free_buffers();
        self.evaluate(None, true).await?;
        self.device.release_free_buffers();
        Ok(())
    }

    /// What the model writes before any fine-tuning, kept beside the samples that follow (with
    /// the page's sampling settings, when they are valid).
    async fn sample_before(&self) -> Result<(), String> {
        let (Some(session), Some(settings)) = (&self.session, self.choices.sampling.clone()) else {
            return Ok(());
        };
        let before = session.sample(&before_settings(&settings), |_| ()).await;
        self.report(Report::BaseSample(before.map_err(|e| e.sentence())?));
        Ok(())
    }
}
