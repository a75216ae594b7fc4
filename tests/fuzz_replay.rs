//! The fuzzer's corpus replayed (examples/fuzz.rs; scripts/fuzz.sh refreshes it): every input
//! the fuzzer kept for giving a new kind of refusal must still give Ok or an error, quickly,
//! never a panic. The valid seeds must still load, so that the loaders are not refusing all.
#![cfg(not(target_arch = "wasm32"))]

#[path = "fuzz/targets.rs"]
mod targets;

use std::time::{Duration, Instant};

/// Far above the slowest input of a fuzzing run (milliseconds), far below the fuzzer's hang.
const SLOWEST: Duration = Duration::from_secs(5);

fn inputs(folder: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/corpus")
        .join(folder);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|f| f.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

/// Runs `load` on every input of `folder`, each of which was kept for the refusal it got: each
/// must still be refused.
fn replay(folder: &str, mut load: impl FnMut(&[u8]) -> webgrad::Result<()>) {
    let inputs = inputs(folder);
    assert!(inputs.len() >= 3, "{folder}: only {} inputs", inputs.len());
    for (name, bytes) in &inputs {
        let start = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load(bytes)));
        let outcome = outcome.unwrap_or_else(|_| panic!("{name} panicked"));
        let took = start.elapsed();
        assert!(took < SLOWEST, "{name} took {took:?}");
        assert!(outcome.is_err(), "{name} is no longer refused");
    }
}

#[test]
fn the_fuzz_corpus_replays_without_a_panic_or_a_hang() {
    let mut sessions = targets::seed_sessions();
    let seeds: Vec<Vec<u8>> = sessions
        .iter()
        .map(|s| pollster::block_on(s.save()).unwrap())
        .collect();
    for seed in &seeds {
        targets::checkpoint(seed, &mut sessions).expect("a seed loads");
    }
    targets::text(targets::SEED_TEXT.repeat(8).as_bytes()).expect("the seed text loads");
    replay("checkpoint", |b| targets::checkpoint(b, &mut sessions));
    replay("text", targets::text);
}
