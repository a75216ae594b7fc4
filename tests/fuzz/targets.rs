//! The fuzzed loaders, shared by the fuzzer (examples/fuzz.rs) and the replay of its corpus in
//! the tests (tests/fuzz_replay.rs): every input must give Ok or an error, never a panic, an
//! abort or a hang. Everything runs on the CPU backend.

use webgrad::data::{text_from_file, Text};
use webgrad::nn::{Init, Preset};
use webgrad::train::{
    assign_all, Checkpoint, Config, Footprint, ModelConfig, Net, Session, Task, TaskData,
};
use webgrad::{Device, Result};

/// Models larger than this are checked (footprint, shapes) but not built while fuzzing: building
/// one that fits is ordinary allocation, and it would slow the search a thousandfold.
const MOST_PARAMETERS_BUILT: u64 = 1 << 20;

/// A text long enough to train on, with few distinct characters (a small vocabulary).
pub const SEED_TEXT: &str = "the cat sat on the mat and the dog sat on the log; ";

/// The sessions whose checkpoints seed the checkpoint fuzzer: a small MLP on xor and a small
/// GPT on `SEED_TEXT`, on the CPU.
pub fn seed_sessions() -> Vec<Session> {
    let mut mlp = Config::defaults(Task::Xor, None, None, 0).expect("xor defaults");
    if let ModelConfig::Mlp(m) = &mut mlp.model {
        (m.depth, m.width) = (1, 4);
    }
    let points =
        webgrad::data::points(webgrad::data::PointSet::Xor, 64, 0.05, 0.2, 0).expect("points");
    let text = Text::new(&SEED_TEXT.repeat(8)).expect("seed text");
    let mut gpt =
        Config::defaults(Task::Text, None, Some(Preset::Tiny), text.tokenizer.len()).expect("gpt");
    if let ModelConfig::Gpt(g) = &mut gpt.model {
        (g.layers, g.width, g.heads, g.context) = (1, 8, 2, 8);
    }
    (mlp.batch, gpt.batch) = (16, 4);
    vec![
        Session::new(mlp, TaskData::Labelled(points), &Device::Cpu).expect("mlp session"),
        Session::new(gpt, TaskData::Text(text), &Device::Cpu).expect("gpt session"),
    ]
}

/// The checkpoint loader as `webgrad sample --load` uses it (parse, check the size, build the
/// model, assign the weights) and as `--load` and the page use it (into a running session).
pub fn checkpoint(bytes: &[u8], sessions: &mut [Session]) -> Result<()> {
    let ck = Checkpoint::parse(bytes)?;
    for s in sessions
        .iter_mut()
        .filter(|s| s.config.task == ck.config.task)
    {
        s.load(bytes)?;
    }
    let footprint = Footprint::of(&ck.config);
    footprint.check(&Device::Cpu)?;
    if footprint.parameters > MOST_PARAMETERS_BUILT {
        return Ok(());
    }
    let net = Net::new(&ck.config.model, &mut Init::new(0, &Device::Cpu))?;
    let params = net.parameters();
    assign_all(&params, &ck.values_for(&params)?)
}

/// The text loader as the CLI's `--text` and the page's "load a text file" use it.
pub fn text(bytes: &[u8]) -> Result<()> {
    Text::new(&text_from_file(bytes)?).map(|_| ())
}
