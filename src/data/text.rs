//! Text to train a GPT on: a character vocabulary built from the text (or GPT-2's tokens), and
//! random windows for training.

use super::{Gpt2Tokens, Tokens, GPT2_VOCAB};
use crate::{Error, Result};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::io::Read;

/// The characters of a text, sorted; a token is an index into them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vocab {
    pub chars: Vec<char>,
}

impl Vocab {
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        text.chars()
            .map(|c| {
                self.chars
                    .binary_search(&c)
                    .map(|i| i as u32)
                    .map_err(|_| Error::Invalid {
                        op: "text",
                        why: format!("the character {c:?} is not in the vocabulary"),
                    })
            })
            .collect()
    }

    pub fn decode(&self, tokens: &[u32]) -> String {
        tokens
            .iter()
            .filter_map(|&t| self.chars.get(t as usize))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.chars.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }
}

/// Characters per block of the validation split: about a scene, far longer than any context,
/// so that a corpus of plays gives validation windows from every play.
const VAL_BLOCK: usize = 20_000;

/// How a text becomes tokens: one per character of the model's own vocabulary (the
/// character GPT), or GPT-2's byte-level BPE (a GPT-2 fine-tuned).
#[derive(Debug, Clone, PartialEq)]
pub enum Tokenizer {
    Chars(Vocab),
    Gpt2,
}

impl Tokenizer {
    /// Tokens it has: the rows a model's embedding needs at least.
    pub fn len(&self) -> usize {
        match self {
            Tokenizer::Chars(v) => v.len(),
            Tokenizer::Gpt2 => GPT2_VOCAB,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a model with `vocab` rows of embedding reads these tokens: exactly the
    /// characters, or at least GPT-2's tokens (a GPT-2 whose vocabulary was padded past them).
    pub fn fits(&self, vocab: usize) -> bool {
        match self {
            Tokenizer::Chars(v) => v.len() == vocab,
            Tokenizer::Gpt2 => vocab >= GPT2_VOCAB,
        }
    }

    /// What encodes and decodes its tokens.
    pub fn tokens(&self) -> Result<&dyn Tokens> {
        Ok(match self {
            Tokenizer::Chars(v) => v,
            Tokenizer::Gpt2 => Gpt2Tokens::shared()?,
        })
    }

    /// The text of `tokens` (bytes that are not UTF-8 as U+FFFD).
    pub fn decode(&self, tokens: &[u32]) -> Result<String> {
        let t = self.tokens()?;
        let bytes: Vec<u8> = tokens.iter().flat_map(|&k| t.token_bytes(k)).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// A tokenised text split 90/10 into training and validation: every tenth block of
/// `VAL_BLOCK` tokens is held out, so validation reads the whole text rather than its end
/// alone; a text shorter than ten blocks holds out its last tenth.
#[derive(Debug, Clone)]
pub struct Text {
    pub tokenizer: Tokenizer,
    pub train: Vec<u32>,
    pub val: Vec<u32>,
}

impl Text {
    /// Any text with at least a few hundred characters.
    pub fn new(text: &str) -> Result<Text> {
        let mut chars: Vec<char> = text.chars().collect();
        long_enough(chars.len())?;
        chars.sort_unstable();
        chars.dedup();
        Text::encoded(text, Vocab { chars })
    }

    /// A text encoded with a model's vocabulary (to fine-tune that model on it): every
    /// character must be one the vocabulary has.
    pub fn with_vocab(text: &str, vocab: Vocab) -> Result<Text> {
        long_enough(text.chars().count())?;
        if let Some(c) = text.chars().find(|c| vocab.chars.binary_search(c).is_err()) {
            return Err(Error::Invalid {
                op: "text",
                why: format!(
                    "the character {c:?} is not one the model knows (its vocabulary has {} characters)",
                    vocab.len()
                ),
            });
        }
        Text::encoded(text, vocab)
    }

    /// `text` as GPT-2's tokens (to fine-tune a GPT-2 on it).
    pub fn gpt2(text: &str) -> Result<Text> {
        let tokens = Gpt2Tokens::shared()?.encode(text);
        if tokens.len() < 256 {
            return Err(Error::Invalid {
                op: "text",
                why: format!(
                    "{} tokens are too few to train on (at least 256; a token is about 4 characters of English)",
                    tokens.len()
                ),
            });
        }
        let (train, val) = split(&tokens);
        Ok(Text {
            tokenizer: Tokenizer::Gpt2,
            train,
            val,
        })
    }

    /// `text` read by a model's `tokenizer` (to fine-tune that model on it).
    pub fn read_with(text: &str, tokenizer: Tokenizer) -> Result<Text> {
        match tokenizer {
            Tokenizer::Chars(vocab) => Text::with_vocab(text, vocab),
            Tokenizer::Gpt2 => Text::gpt2(text),
        }
    }

    /// The same text read by `tokenizer`.
    pub fn retokenized(&self, tokenizer: Tokenizer) -> Result<Text> {
        let whole = self.tokenizer.decode(&self.train)? + &self.tokenizer.decode(&self.val)?;
        Text::read_with(&whole, tokenizer)
    }

    /// `text` as tokens of `vocab`, split.
    fn encoded(text: &str, vocab: Vocab) -> Result<Text> {
        let tokens = vocab.encode(text)?;
        let (train, val) = split(&tokens);
        Ok(Text {
            tokenizer: Tokenizer::Chars(vocab),
            train,
            val,
        })
    }

    /// The built-in Shakespeare from web/data/shakespeare.txt.gz.
    pub fn from_gzip(bytes: &[u8]) -> Result<Text> {
        Text::new(&gunzip(bytes)?)
    }
}

/// Refuses a text of `count` characters too short to train on.
fn long_enough(count: usize) -> Result<()> {
    if count < 256 {
        return Err(Error::Invalid {
            op: "text",
            why: format!("{count} characters are too few to train on (at least 256)"),
        });
    }
    Ok(())
}

/// The UTF-8 text of a gzip file.
pub fn gunzip(bytes: &[u8]) -> Result<String> {
    let mut s = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut s)
        .map_err(|e| Error::Invalid {
            op: "text",
            why: format!("not a gzip UTF-8 file: {e}"),
        })?;
    Ok(s)
}

/// A user's text file as a string: UTF-8 with no NUL byte. A binary file is refused with its
/// reason rather than read as replacement characters (which would then be trained on).
pub fn text_from_file(bytes: &[u8]) -> Result<String> {
    let refuse = |why: String| Error::Invalid { op: "text", why };
    let s = std::str::from_utf8(bytes).map_err(|e| {
        refuse(format!(
            "this is not UTF-8 text (byte {} is not part of any character); save it as UTF-8",
            e.valid_up_to()
        ))
    })?;
    // A byte-order mark says how the file is encoded; it is not a character of the text.
    let s = s.strip_prefix('\u{feff}').unwrap_or(s);
    if let Some(at) = s.find('\0') {
        return Err(refuse(format!(
            "byte {at} is a NUL, which text files do not hold: this looks like a binary file"
        )));
    }
    Ok(s.to_string())
}

/// The training and validation tokens of `Text::new`'s split.
fn split(tokens: &[u32]) -> (Vec<u32>, Vec<u32>) {
    if tokens.len() < 10 * VAL_BLOCK {
        let cut = tokens.len() * 9 / 10;
        return (tokens[..cut].to_vec(), tokens[cut..].to_vec());
    }
    let (mut train, mut val) = (Vec::new(), Vec::new());
    for (i, block) in tokens.chunks(VAL_BLOCK).enumerate() {
        let to = if i % 10 == 9 { &mut val } else { &mut train };
        to.extend_from_slice(block);
    }
    (train, val)
}

/// Random windows of `context + 1` tokens: inputs and next-token targets. Batch k is a pure
/// function of the seed and k (see `Batches`).
pub fn windows(
    tokens: &[u32],
    batch: usize,
    context: usize,
    seed: u64,
    k: u64,
) -> (Vec<u32>, Vec<u32>) {
    let mut rng = SmallRng::seed_from_u64(super::mix(seed, k));
    let span = tokens.len().saturating_sub(context + 1).max(1);
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..batch {
        let s = rng.random_range(0..span);
        x.extend_from_slice(&tokens[s..s + context]);
        y.extend_from_slice(&tokens[s + 1..s + context + 1]);
    }
    (x, y)
}

/// Evaluation windows of `context + 1` tokens spread evenly over `tokens`, dealt into
/// `batches` batches of `rows`: batch b holds windows b, b + batches, b + 2·batches, … so that
/// every batch samples the whole split, and the spread of the batch means measures the noise of
/// their mean (see `Session::evaluate`). The same windows every time: no seed.
pub fn spread_windows(
    tokens: &[u32],
    rows: usize,
    batches: usize,
    context: usize,
    b: usize,
) -> (Vec<u32>, Vec<u32>) {
    let span = tokens.len().saturating_sub(context + 1) + 1;
    let count = rows * batches;
    let (mut x, mut y) = (Vec::with_capacity(rows * context), Vec::new());
    for i in (b..count).step_by(batches) {
        let s = i * span / count;
        x.extend_from_slice(&tokens[s..s + context]);
        y.extend_from_slice(&tokens[s + 1..s + context + 1]);
    }
    (x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_files_must_be_utf8_without_nul() {
        assert_eq!(text_from_file("héllo".as_bytes()).unwrap(), "héllo");
        assert_eq!(text_from_file("\u{feff}hi".as_bytes()).unwrap(), "hi");
        let e = text_from_file(b"ab\xff\xfecd").unwrap_err().to_string();
        assert!(e.contains("not UTF-8 text (byte 2"), "{e}");
        let e = text_from_file(b"abc\0def").unwrap_err().to_string();
        assert!(e.contains("byte 3 is a NUL"), "{e}");
    }

    #[test]
    fn validation_is_every_tenth_block_of_a_long_text() {
        let tokens: Vec<u32> = (0..25 * VAL_BLOCK as u32).collect();
        let (train, val) = split(&tokens);
        assert_eq!(train.len() + val.len(), tokens.len());
        let blocks: Vec<u32> = val
            .iter()
            .step_by(VAL_BLOCK)
            .map(|t| t / VAL_BLOCK as u32)
            .collect();
        assert_eq!(blocks, [9, 19]);
        assert!(train.iter().all(|t| (t / VAL_BLOCK as u32) % 10 != 9));
        let (train, val) = split(&tokens[..1000]);
        assert_eq!(
            (train.len(), val[0]),
            (900, 900),
            "a short text holds out its end"
        );
    }
    #[test]
    fn spread_windows_cover_the_split_evenly_and_deal_it_into_batches() {
        let tokens: Vec<u32> = (0..1001).collect();
        let (rows, batches, context) = (5, 4, 10);
        let starts: Vec<Vec<u32>> = (0..batches)
            .map(|b| {
                let (x, y) = spread_windows(&tokens, rows, batches, context, b);
                assert_eq!((x.len(), y.len()), (rows * context, rows * context));
                assert!(
                    x.iter().zip(&y).all(|(a, b)| b == &(a + 1)),
                    "targets are next tokens"
                );
                x.chunks(context).map(|w| w[0]).collect()
            })
            .collect();
        // Window i of 20 starts at i · 991 / 20, 991 being the number of possible starts.
        for (b, s) in starts.iter().enumerate() {
            let want: Vec<u32> = (0..rows)
                .map(|r| ((b + r * batches) * 991 / 20) as u32)
                .collect();
            assert_eq!(s, &want, "batch {b}");
        }
        assert_eq!(
            spread_windows(&tokens, rows, batches, context, 2),
            spread_windows(&tokens, rows, batches, context, 2),
            "the same windows every time"
        );
    }
}
