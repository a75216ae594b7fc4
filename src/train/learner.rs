//! What a session learns from: its model paired with the data that model reads, checked to fit
//! each other when the session is made.

use super::Config;
use crate::data::{Labelled, Text};
use crate::nn::{Cnn, Gpt, Init, KeptInputs, Mlp, Model};
use crate::train::ModelConfig;
use crate::{Error, Result, Tensor};

/// The data a session trains on.
#[derive(Clone)]
pub enum TaskData {
    Labelled(Labelled),
    Text(Text),
}

impl TaskData {
    /// Training examples (labelled) or characters (text).
    pub(super) fn examples(&self) -> usize {
        match self {
            TaskData::Labelled(d) => d.train.len(),
            TaskData::Text(t) => t.train.len(),
        }
    }
}

/// A session's model with the data it reads, paired by type when the session is made: a
/// classifier reads labelled examples, the GPT reads windows of text as long as its context.
pub(super) enum Learner {
    Classifier { model: Net, data: Labelled },
    Text { model: Gpt, data: Text },
}

impl Learner {
    /// Builds the model of `config` for `data`, after checking they fit each other.
    pub(super) fn new(config: &Config, data: TaskData, init: &mut Init) -> Result<Learner> {
        let window = config.text_window().unwrap_or(0);
        let recompute = config.recompute;
        let config = &config.model;
        let misfit = || Error::Invalid {
            op: "settings",
            why: "the model does not fit the task's data".into(),
        };
        let mut classifier = |fits: bool, data| {
            if !fits {
                return Err(misfit());
            }
            let model = Net::new(config, init)?;
            Ok(Learner::Classifier { model, data })
        };
        match (config, data) {
            (ModelConfig::Mlp(c), TaskData::Labelled(d)) => {
                classifier(c.inputs == d.train.features && c.outputs == d.classes, d)
            }
            (ModelConfig::Cnn(c), TaskData::Labelled(d)) => classifier(
                c.image * c.image == d.train.features && c.classes == d.classes,
                d,
            ),
            (ModelConfig::Gpt(c), TaskData::Text(t)) => {
                if t.val.len() <= window || t.train.len() <= window {
                    return Err(Error::Invalid {
                        op: "settings",
                        why: format!(
                            "the text is too short for a context of {window}: its validation tenth holds {} tokens, and a window needs {} (give the model at least {} tokens of text)",
                            t.val.len(),
                            window + 1,
                            10 * (window + 1)
                        ),
                    });
                }
                if !t.tokenizer.fits(c.vocab) {
                    return Err(misfit());
                }
                let mut model = Gpt::new(c, init)?;
                model.set_recompute(recompute.then(|| KeptInputs::for_device(init.device())));
                Ok(Learner::Text { model, data: t })
            }
            _ => Err(misfit()),
        }
    }

    pub(super) fn model(&self) -> &dyn Model {
        match self {
            Learner::Classifier { model, .. } => model.as_model(),
            Learner::Text { model, .. } => model,
        }
    }

    /// The data, given back when the model is dropped.
    pub(super) fn into_data(self) -> TaskData {
        match self {
            Learner::Classifier { data, .. } => TaskData::Labelled(data),
            Learner::Text { data, .. } => TaskData::Text(data),
        }
    }
}

/// The model of a session.
pub enum Net {
    Mlp(Mlp),
    Cnn(Cnn),
    Gpt(Gpt),
}

impl Net {
    pub(super) fn as_model(&self) -> &dyn Model {
        match self {
            Net::Mlp(m) => m,
            Net::Cnn(m) => m,
            Net::Gpt(m) => m,
        }
    }

    /// Builds the model of `config` with seeded initial weights.
    pub fn new(config: &ModelConfig, init: &mut Init) -> Result<Net> {
        Ok(match config {
            ModelConfig::Mlp(c) => Net::Mlp(Mlp::new(c, init)?),
            ModelConfig::Cnn(c) => Net::Cnn(Cnn::new(c, init)?),
            ModelConfig::Gpt(c) => Net::Gpt(Gpt::new(c, init)?),
        })
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.as_model().forward(x)
    }

    /// The model's loss for `x` against `targets` (`Model::loss`).
    pub fn loss(&self, x: &Tensor, targets: &Tensor, seed: Option<u32>) -> Result<Tensor> {
        self.as_model().loss(x, targets, seed)
    }

    pub fn parameters(&self) -> Vec<(String, Tensor)> {
        self.as_model().parameters()
    }
}
