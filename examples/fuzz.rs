//! A fuzzer for the checkpoint and text loaders that runs on stable Rust: seeded mutations of
//! valid files (bit flips, interesting bytes, cuts, splices, and numbers in a checkpoint's JSON
//! header replaced with hostile ones, its length prefix kept right so parsing goes deep). An
//! input that gives an error not seen before joins the corpus; a panic or an input that runs
//! past the hang limit is written to the crashes folder. The inputs are the same for a seed;
//! how many run (and so which are kept) depends on the machine's speed, as the run is timed.
//!
//! cargo run --release --example fuzz -- SECONDS SEED OUT_DIR   (scripts/fuzz.sh runs it)

#![cfg_attr(target_arch = "wasm32", allow(dead_code, unused_imports))]

#[path = "../tests/fuzz/targets.rs"]
mod targets;

use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// An input taking longer than this is a hang.
const HANG: Duration = Duration::from_secs(10);
/// Most corpus entries written out per target (the replay in the tests reads them all).
const MOST_SAVED: usize = 40;
/// Numbers a hostile header might hold.
const HOSTILE_NUMBERS: [&str; 10] = [
    "0",
    "-1",
    "1",
    "65535",
    "4294967296",
    "18446744073709551615",
    "1e308",
    "NaN",
    "99999999999999999999",
    "3.5",
];

#[derive(Clone, Copy, PartialEq)]
enum Target {
    Checkpoint,
    Text,
}

fn mutate(input: &[u8], corpus: &[Vec<u8>], target: Target, rng: &mut SmallRng) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let choice = if target == Target::Checkpoint {
            rng.random_range(0..8)
        } else {
            rng.random_range(0..6)
        };
        if b.is_empty() {
            b.push(rng.random());
            continue;
        }
        let at = rng.random_range(0..b.len());
        match choice {
            0 => b[at] ^= 1 << rng.random_range(0..8),
            1 => b[at] = [0u8, 0xff, 0x7f, 0x80, b'{', b'"', b'\n'][rng.random_range(0..7)],
            2 => b.truncate(at),
            3 => {
                let n = rng.random_range(1..=16.min(b.len() - at));
                b.drain(at..at + n);
            }
            4 => {
                let other = &corpus[rng.random_range(0..corpus.len())];
                if !other.is_empty() {
                    let from = rng.random_range(0..other.len());
                    let n = rng.random_range(1..=64.min(other.len() - from));
                    b.splice(at..at, other[from..from + n].iter().copied());
                }
            }
            5 => b
                .splice(
                    at..at,
                    (0..rng.random_range(1..8)).map(|_| rng.random::<u8>()),
                )
                .for_each(drop),
            6 => b = replace_header_number(&b, rng),
            _ => poison_float(&mut b, rng),
        }
    }
    b
}

/// A number in the JSON header replaced by a hostile one, the 8-byte length prefix fixed.
fn replace_header_number(b: &[u8], rng: &mut SmallRng) -> Vec<u8> {
    let Some(len) = b
        .get(..8)
        .map(|p| u64::from_le_bytes(p.try_into().unwrap()) as usize)
    else {
        return b.to_vec();
    };
    let Some(header) = b.get(8..8 + len) else {
        return b.to_vec();
    };
    let digits: Vec<usize> = (0..header.len())
        .filter(|&i| header[i].is_ascii_digit() && (i == 0 || !header[i - 1].is_ascii_digit()))
        .collect();
    if digits.is_empty() {
        return b.to_vec();
    }
    let start = digits[rng.random_range(0..digits.len())];
    let end = (start..header.len())
        .find(|&i| !header[i].is_ascii_digit())
        .unwrap_or(header.len());
    let mut h = header[..start].to_vec();
    h.extend_from_slice(HOSTILE_NUMBERS[rng.random_range(0..HOSTILE_NUMBERS.len())].as_bytes());
    h.extend_from_slice(&header[end..]);
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&h);
    out.extend_from_slice(&b[8 + len..]);
    out
}

/// A NaN or an infinity written over four bytes of the data after the header.
fn poison_float(b: &mut [u8], rng: &mut SmallRng) {
    let Some(len) = b
        .get(..8)
        .map(|p| u64::from_le_bytes(p.try_into().unwrap()) as usize)
    else {
        return;
    };
    let data = 8usize.saturating_add(len);
    if data + 4 <= b.len() {
        let at = data + 4 * rng.random_range(0..(b.len() - data) / 4);
        let v = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MAX][rng.random_range(0..4)];
        b[at..at + 4].copy_from_slice(&v.to_le_bytes());
    }
}

/// An error's kind: its first plain words, leaving out names, numbers and quoted values, so
/// that a refusal found along a new path counts once however the input spelled it.
fn kind(e: &webgrad::Error) -> String {
    let message = e.to_string();
    let words = message
        .split_whitespace()
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase()));
    words.take(10).collect::<Vec<_>>().join(" ")
}

/// The input being run and when it started, watched from another thread: an input that never
/// returns is written out as a hang and the fuzzer exits with status 1.
#[derive(Clone)]
struct Watched {
    input: Arc<Mutex<Vec<u8>>>,
    started_ms: Arc<AtomicU64>,
    clock: Instant,
}

impl Watched {
    fn new(crashes: PathBuf) -> Watched {
        let w = Watched {
            input: Arc::default(),
            started_ms: Arc::new(AtomicU64::new(u64::MAX)),
            clock: Instant::now(),
        };
        let dog = w.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_secs(1));
            let started = dog.started_ms.load(Ordering::Relaxed);
            if started != u64::MAX
                && dog.clock.elapsed().as_millis() as u64 > started + HANG.as_millis() as u64
            {
                std::fs::create_dir_all(&crashes).unwrap();
                write(&crashes.join("hang-stuck"), &dog.input.lock().unwrap());
                println!(
                    "an input ran past {} s: written to {}",
                    HANG.as_secs(),
                    crashes.display()
                );
                std::process::exit(1);
            }
        });
        w
    }

    fn start(&self, input: &[u8]) {
        *self.input.lock().unwrap() = input.to_vec();
        self.started_ms
            .store(self.clock.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn stop(&self) {
        self.started_ms.store(u64::MAX, Ordering::Relaxed);
    }
}

struct Fuzz {
    watched: Watched,
    target: Target,
    corpus: Vec<Vec<u8>>,
    kinds: HashSet<String>,
    dir: PathBuf,
    /// The inputs that found a new kind of refusal, in the order found.
    found: Vec<Vec<u8>>,
    executions: u64,
    crashes: u64,
    /// Inputs that loaded: mutations that kept the file valid reach the deepest checks.
    loaded: u64,
    slowest: Duration,
}

impl Fuzz {
    fn run_one(&mut self, input: Vec<u8>, sessions: &mut [webgrad::train::Session]) {
        let start = Instant::now();
        self.watched.start(&input);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match self.target {
            Target::Checkpoint => targets::checkpoint(&input, sessions),
            Target::Text => targets::text(&input),
        }));
        self.watched.stop();
        let took = start.elapsed();
        self.executions += 1;
        self.slowest = self.slowest.max(took);
        match result {
            Err(_) => self.keep_crash(&input, "panic"),
            Ok(_) if took > HANG => self.keep_crash(&input, "hang"),
            Ok(Err(e)) if self.kinds.insert(kind(&e)) => {
                if std::env::var_os("FUZZ_SHOW_KINDS").is_some() {
                    println!("{}", kind(&e));
                }
                self.keep(input)
            }
            Ok(Err(_)) => {}
            Ok(Ok(())) => self.loaded += 1,
        }
    }

    fn keep(&mut self, input: Vec<u8>) {
        self.found.push(input.clone());
        self.corpus.push(input);
    }

    /// Writes out `MOST_SAVED` of the inputs that found a new kind of refusal, spread evenly
    /// over the run: the later ones were found deeper in the loaders.
    fn write_corpus(&self) {
        let n = self.found.len();
        let picked: std::collections::BTreeSet<usize> = (0..MOST_SAVED.min(n))
            .map(|i| i * n / MOST_SAVED.min(n))
            .collect();
        for (k, &i) in picked.iter().enumerate() {
            write(&self.dir.join(format!("{k:03}")), &self.found[i]);
        }
    }

    fn keep_crash(&mut self, input: &[u8], what: &str) {
        self.crashes += 1;
        let dir = self.dir.parent().unwrap().join("crashes");
        std::fs::create_dir_all(&dir).unwrap();
        write(&dir.join(format!("{what}-{}", self.crashes)), input);
    }
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// Native only (it blocks on the CPU backend's readbacks); the browser build of the tests
/// compiles examples too.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, seconds, seed, out] = args.as_slice() else {
        eprintln!("usage: fuzz SECONDS SEED OUT_DIR");
        std::process::exit(2);
    };
    let seconds: u64 = seconds.parse().expect("SECONDS is a whole number");
    let seed: u64 = seed.parse().expect("SEED is a whole number");
    let mut sessions = targets::seed_sessions();
    let checkpoints = sessions
        .iter()
        .map(|s| pollster::block_on(s.save()).expect("save"))
        .collect();
    // Panics are counted and their inputs kept; their messages would drown the summary.
    std::panic::set_hook(Box::new(|_| {}));
    let texts = vec![
        targets::SEED_TEXT.repeat(8).into_bytes(),
        "héllo wörld — ünïcode ✓ ".repeat(20).into_bytes(),
    ];
    let watched = Watched::new(Path::new(out).join("crashes"));
    let mut total = (0, 0);
    for (target, seeds, name) in [
        (Target::Checkpoint, checkpoints, "checkpoint"),
        (Target::Text, texts, "text"),
    ] {
        let dir = Path::new(out).join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut fuzz = Fuzz {
            watched: watched.clone(),
            target,
            corpus: seeds,
            kinds: HashSet::new(),
            dir,
            found: Vec::new(),
            executions: 0,
            crashes: 0,
            loaded: 0,
            slowest: Duration::ZERO,
        };
        let mut rng = SmallRng::seed_from_u64(seed);
        let deadline = Instant::now() + Duration::from_secs(seconds / 2);
        while Instant::now() < deadline {
            let base = fuzz.corpus[rng.random_range(0..fuzz.corpus.len())].clone();
            let input = mutate(&base, &fuzz.corpus, target, &mut rng);
            fuzz.run_one(input, &mut sessions);
        }
        fuzz.write_corpus();
        println!(
            "{name}: {} executions in {} s, {} loaded, {} kinds of refusal, {} crashes or hangs, slowest input {:.1} ms",
            fuzz.executions, seconds / 2, fuzz.loaded, fuzz.kinds.len(), fuzz.crashes, fuzz.slowest.as_secs_f64() * 1e3
        );
        total = (total.0 + fuzz.executions, total.1 + fuzz.crashes);
    }
    println!(
        "total: {} executions, {} crashes or hangs",
        total.0, total.1
    );
    std::process::exit(if total.1 == 0 { 0 } else { 1 });
}
