//! What the page and the training worker say to each other. The page sends requests; the
//! worker, which owns the GPU device, the session and the loop, answers with reports. Each
//! report carries the run it belongs to, so that the page drops those of a run it replaced.

use super::form::Form;
use crate::nn::Preset;
use crate::train::{Flow, Histogram, Inside, SampleSettings, Sampled, Task};
use serde::{Deserialize, Serialize};

/// What the worker answers when Reset finds invalid settings, and how the page's sentence about
/// them starts (`shared::show_settings_invalid`); fixing them removes it.
pub const SETTINGS_INVALID: &str = "Some settings are not valid";

/// The page's requests to the worker.
#[derive(Serialize, Deserialize, Debug)]
pub enum Request {
    /// A new run from the settings: the worker loads the data, checks the settings against
    /// it and builds the session.
    Reset(Plan),
    /// Training on (true) or paused; `ask` counts the page's Run requests.
    Run {
        on: bool,
        ask: u64,
    },
    /// One step, then an evaluation.
    Step,
    Save(Saving),
    /// The model as it stands becomes the frozen base of a LoRA fine-tuning on a text.
    FineTune(FineTune),
    Load(Bytes),
    Sample(SampleSettings),
    /// The pad's drawing as the model's input, or None once cleared.
    Pad(Option<Vec<f32>>),
    /// What the views show changed: the worker reads them back again.
    Choose(Choices),
    /// How fast to train, and whether to pause at the schedule's end.
    Pace(Pace),
    /// Destroys the GPU device, as a driver reset would (for tests).
    LoseDevice,
    /// A message the worker could not read as a request (never sent by the page): it pauses
    /// training and says why.
    Unreadable(String),
}

/// What a run is made of.
#[derive(Serialize, Deserialize, Debug)]
pub struct Plan {
    /// The page's count of Resets: the reports of this run carry it.
    pub run: u64,
    pub task: Task,
    pub form: Form,
    /// The user's own 2-D points (a CSV file's text).
    pub own_points: Option<String>,
    /// The user's own text ("": the built-in one).
    pub user_text: String,
    pub choices: Choices,
}

/// How fast training goes: a person watches a run at a few steps a second; `None` trains as
/// fast as the device goes. The schedule's end pauses the run only when asked.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq)]
pub struct Pace {
    pub steps_per_s: Option<f32>,
    pub stop_at_end: bool,
}

/// What a download holds.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub enum Saving {
    /// The whole run: weights and optimizer state, to load and train on.
    Checkpoint,
    /// A LoRA run's adapters alone, under PyTorch PEFT's names.
    Adapters,
    /// A LoRA run's model with its adapters merged into the weights: a plain model.
    Merged,
}

/// A LoRA fine-tuning of the model as it stands.
#[derive(Serialize, Deserialize, Debug)]
pub struct FineTune {
    /// The page's count of Resets (a fine-tuning is a new run).
    pub run: u64,
    pub rank: usize,
    /// The text to fine-tune on.
    pub text: String,
    /// How to sample the model before it is fine-tuned, for the page to compare with after.
    pub sample: SampleSettings,
}

/// The page's choices of what the views show.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Choices {
    /// The test digit whose feature maps are shown (None: the first).
    pub digit: Option<usize>,
    /// The confusion matrix's chosen cell (true, predicted).
    pub cell: Option<(usize, usize)>,
    /// The prompt the attention map reads.
    pub prompt: String,
    /// Whether the feature maps show the pad's drawing rather than a test digit.
    pub drawn: bool,
    /// How the samples written during training are drawn (None while the sampling controls
    /// are invalid: then none is written).
    pub sampling: Option<SampleSettings>,
}

/// A report of the worker, with the run it belongs to and the latest Run request it took.
#[derive(Serialize, Deserialize, Debug)]
pub struct Envelope {
    pub run: u64,
    pub ask: u64,
    pub report: Report,
}

/// What the worker tells the page.
#[derive(Serialize, Deserialize, Debug)]
pub enum Report {
    /// The device training runs on, as a sentence.
    Device(String),
    /// The settings as checked: each control, with a sentence when it is invalid.
    Marks(Vec<(String, Option<String>)>),
    /// The GPT size the worker chose for this GPU (the size control was on auto).
    Preset(Preset),
    /// A new session, before its first evaluation.
    Built(Built),
    /// Steps taken: the figures the stats line shows.
    Progress(Progress),
    Evaluated(Evaluated),
    Views(Views),
    Histograms(Vec<Histogram>),
    /// A sampling began.
    SampleStarted(SampleStart),
    Sampled(Vec<Sampled>),
    /// What the model wrote before a LoRA fine-tuning began.
    BaseSample(String),
    /// A sentence beside the prompt (None: it is fine).
    PromptNote(Option<String>),
    /// The pad's drawing through the model.
    Pad(PadView),
    /// A checkpoint to download.
    Saved {
        bytes: Bytes,
        name: String,
    },
    /// The run reached its step count: training paused, with a sentence.
    Finished(Option<String>),
    /// The run passed its schedule's end and trains on, with a sentence.
    ScheduleEnd(String),
    /// A checkpoint was loaded into the run, which is now at this step.
    Loaded(u64),
    /// A checkpoint of another task or model became the run: its settings, for the controls.
    Adopted(crate::train::Config),
    /// Training paused for an error, said in the sentence.
    Failed(String),
    /// A sentence about the run (None clears it).
    Note(Option<String>),
    /// Work that may take long has begun (building a model, its first evaluation), said as
    /// what it does; the page counts the seconds until figures come. None: it is over.
    Busy(Option<String>),
    /// The error sentence is no longer true.
    ClearError,
    /// The step of the checkpoint kept on the CPU side.
    Kept(u64),
    /// The run went back to step `0` (a new device resumed from it, or a diverged run fell
    /// back to its last good weights, of that step): the figures after it are gone.
    Rewound(u64),
    /// The run could not be resumed: the page starts it again.
    Restart,
    /// What the worker measured on this GPU, every adapter's (`tune::Cache`'s text): the page
    /// keeps it for the next visit.
    Tuned(String),
}

/// A new session, as the page shows it.
#[derive(Serialize, Deserialize, Debug)]
pub struct Built {
    pub task: Task,
    /// (layer, parameter shapes, count) rows, then the total.
    pub summary: Vec<(String, Vec<String>, usize)>,
    pub parameters: usize,
    /// The GPT's layers and heads, for the attention choices.
    pub attention: Option<(usize, usize)>,
    /// The 2-D points, for the boundary view.
    pub points: Option<Points>,
    pub eval_every: u64,
    /// Tokens (or examples) per step.
    pub items_per_step: usize,
    pub note: Option<String>,
    /// Why the run trains on the backend it does, when the page chose it (auto).
    pub backend: Option<String>,
    /// The precision of the products of a run on the GPU, and why.
    pub precision: Option<crate::gpu::PrecisionChoice>,
    /// The schedule's last step.
    pub steps: u64,
    /// The rank of a LoRA run's adapters.
    pub lora: Option<usize>,
}

/// A sampling as it begins: its prompt, the step of the model that writes it, how many
/// characters it will write, and whether training wrote it on its own (not the Sample button).
#[derive(Serialize, Deserialize, Debug)]
pub struct SampleStart {
    pub prompt: String,
    pub step: u64,
    pub chars: usize,
    pub automatic: bool,
}

/// The 2-D points of a run: x, y and label per point.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct Points {
    pub train: Vec<(f32, f32, u32)>,
    pub test: Vec<(f32, f32, u32)>,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Progress {
    pub step: u64,
    pub train_loss: Option<f32>,
    pub steps_per_s: Option<f32>,
    /// Milliseconds spent training in this run, evaluations included.
    pub trained_ms: f64,
    /// Whether these steps ended in an evaluation (reported before this).
    pub evaluated: bool,
    pub memory: Memory,
}

/// What the worker holds, to watch for growth over a long session.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default, PartialEq)]
pub struct Memory {
    /// The most bytes of GPU buffers our pool owned at once since the last report (None on
    /// the CPU backend).
    pub gpu_bytes: Option<u64>,
    /// Bytes of the worker's WebAssembly memory.
    pub heap_bytes: u64,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct Evaluated {
    pub step: u64,
    pub train_loss: Option<f32>,
    pub val_loss: f32,
    pub val_acc: Option<f32>,
    /// A LoRA run's loss on the text its base model learnt.
    pub base_loss: Option<f32>,
    pub flow: Option<Flow>,
}

/// The views of what the model learned, read back after an evaluation or a choice.
#[derive(Serialize, Deserialize, Debug)]
pub enum Views {
    /// P(class) over the plane's grid, the neurons over a coarser grid, the weights.
    Plane {
        probs: Vec<f32>,
        neurons: Vec<Inside>,
        weights: Vec<Inside>,
    },
    Digits(DigitViews),
    /// The attention of each layer over the prompt (none for an empty prompt).
    Attention {
        layers: Vec<Inside>,
        /// The text of each token read, for the map's sides.
        labels: Vec<String>,
    },
}

#[derive(Serialize, Deserialize, Debug)]
pub struct DigitViews {
    /// The first test digits.
    pub grid: Vec<Tile>,
    pub classes: usize,
    /// counts[true × classes + predicted] over the test digits.
    pub counts: Vec<usize>,
    pub cell: Option<CellView>,
    /// A CNN's first-layer filters.
    pub filters: Option<Inside>,
    /// A CNN's feature maps for the chosen digit, and what it is (none while the pad's
    /// drawing is shown).
    pub maps: Option<(Vec<Inside>, String)>,
}

/// A test digit as the model read it.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Tile {
    pub index: usize,
    pub pixels: Vec<f32>,
    pub truth: u32,
    pub predicted: u32,
}

/// The digits of the confusion matrix's chosen cell.
#[derive(Serialize, Deserialize, Debug)]
pub struct CellView {
    pub at: (usize, usize),
    pub tiles: Vec<Tile>,
    /// How many test digits the cell holds (the tiles show the first).
    pub count: usize,
}

#[derive(Serialize, Deserialize, Debug)]
pub struct PadView {
    pub digit: Vec<f32>,
    pub probs: Vec<f32>,
    /// A CNN's feature maps of the drawing.
    pub maps: Vec<Inside>,
}

/// Bytes sent as a typed array, not as a list of numbers (a checkpoint is megabytes).
#[derive(Debug, Clone, Default)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes(v.to_vec()))
            }
            fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Bytes, E> {
                Ok(Bytes(v))
            }
        }
        d.deserialize_byte_buf(Visit)
    }
}
