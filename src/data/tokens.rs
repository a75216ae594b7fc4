//! Text as tokens and back: the character GPT's vocabulary (`Vocab`, one token per character)
//! and GPT-2's byte-level BPE (`Gpt2Tokens`, r50k_base's 50,257 tokens, through tiktoken-rs:
//! the same tokens as OpenAI's tiktoken). A GPT-2 token may hold part of a character's UTF-8
//! bytes, so tokens decode to bytes, and `Utf8Stream` hands out text as whole characters
//! arrive.

use super::Vocab;
use crate::{Error, Result};

/// What a sampler needs of a tokenizer.
pub trait Tokens {
    fn encode(&self, text: &str) -> Result<Vec<u32>>;
    /// The bytes of one token (a character's UTF-8, or a BPE token's bytes).
    fn token_bytes(&self, token: u32) -> Vec<u8>;
    /// A token to start from when the prompt is empty.
    fn start(&self) -> u32;
}

impl Tokens for Vocab {
    fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Vocab::encode(self, text)
    }
    fn token_bytes(&self, token: u32) -> Vec<u8> {
        self.decode(&[token]).into_bytes()
    }
    fn start(&self) -> u32 {
        let newline = Vocab::encode(self, "\n").ok();
        newline.and_then(|t| t.first().copied()).unwrap_or(0)
    }
}

/// GPT-2's tokenizer (r50k_base).
pub struct Gpt2Tokens {
    bpe: tiktoken_rs::CoreBPE,
}

/// GPT-2's "<|endoftext|>", which starts a text with nothing before it.
pub const GPT2_END_OF_TEXT: u32 = 50256;
/// Tokens of GPT-2's vocabulary.
pub const GPT2_VOCAB: usize = 50257;

/// GPT-2's tokenizer, built once: its 50,257 merges take a moment to read.
static GPT2: std::sync::OnceLock<Gpt2Tokens> = std::sync::OnceLock::new();

impl Gpt2Tokens {
    /// The one tokenizer every user of GPT-2's tokens shares.
    pub fn shared() -> Result<&'static Gpt2Tokens> {
        if let Some(t) = GPT2.get() {
            return Ok(t);
        }
        let made = Gpt2Tokens::new()?;
        Ok(GPT2.get_or_init(|| made))
    }

    pub fn new() -> Result<Gpt2Tokens> {
        let bpe = tiktoken_rs::r50k_base().map_err(|e| Error::Invalid {
            op: "tokenizer",
            why: format!("GPT-2's tokenizer did not load: {e}"),
        })?;
        Ok(Gpt2Tokens { bpe })
    }

    /// The text's tokens; "<|endoftext|>" written out is that token.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.bpe.encode_with_special_tokens(text)
    }

    /// The tokens' bytes, which need not be UTF-8 (a character cut between two tokens).
    pub fn decode_bytes(&self, tokens: &[u32]) -> Vec<u8> {
        tokens.iter().flat_map(|&t| self.token_bytes(t)).collect()
    }
}

impl Tokens for Gpt2Tokens {
    fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(Gpt2Tokens::encode(self, text))
    }
    /// A token outside the vocabulary (a model's logits padded past it) has no bytes.
    fn token_bytes(&self, token: u32) -> Vec<u8> {
        self.bpe.decode_bytes(&[token]).unwrap_or_default()
    }
    fn start(&self) -> u32 {
        GPT2_END_OF_TEXT
    }
}

/// Bytes in, text out as whole characters arrive: a character whose bytes are split between
/// tokens comes out once its last byte does; bytes that can never be UTF-8 come out as U+FFFD.
#[derive(Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// The text that `bytes` complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).expect("valid"));
                    match e.error_len() {
                        // An incomplete character at the end: wait for its next bytes.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings and their tokens as OpenAI's tiktoken gives them (tools/gpt2_tokens_golden.py).
    const GOLDEN: &str = include_str!("../../tests/data/gpt2_tokens.json");

    #[test]
    fn gpt2s_tokens_are_tiktokens() {
        let golden: serde_json::Value = serde_json::from_str(GOLDEN).unwrap();
        let tokens = Gpt2Tokens::new().unwrap();
        let cases = golden["cases"].as_array().unwrap();
        assert!(cases.len() >= 10);
        for case in cases {
            let text = case["text"].as_str().unwrap();
            let want: Vec<u32> = serde_json::from_value(case["tokens"].clone()).unwrap();
            assert_eq!(tokens.encode(text), want, "{text:?}");
            assert_eq!(tokens.decode_bytes(&want), text.as_bytes(), "{text:?}");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_round_trip() {
        let tokens = Gpt2Tokens::new().unwrap();
        // Every byte is a token of its own in GPT-2's vocabulary, so any bytes decode from
        // some tokens; a character's bytes split over two tokens come out whole when joined.
        let smile = "🙂".as_bytes();
        let parts: Vec<u32> = tokens.encode("🙂");
        assert!(parts.len() > 1, "{parts:?}");
        let mut stream = Utf8Stream::default();
        let text: String = parts
            .iter()
            .map(|&t| stream.push(&tokens.token_bytes(t)))
            .collect();
        assert_eq!(text, "🙂");
        assert_eq!(tokens.decode_bytes(&parts), smile);
        // A lone continuation byte is a token whose bytes are not UTF-8.
        let lone = (0..GPT2_VOCAB as u32)
            .find(|&t| tokens.token_bytes(t) == [0x80])
            .unwrap();
        assert_eq!(tokens.decode_bytes(&[lone, lone]), [0x80, 0x80]);
        assert_eq!(
            Utf8Stream::default().push(&tokens.decode_bytes(&[lone])),
            "\u{FFFD}"
        );
    }

    #[test]
    fn characters_cut_between_pushes_come_out_whole() {
        let mut s = Utf8Stream::default();
        let smile = "🙂".as_bytes();
        assert_eq!(s.push(b"a"), "a");
        assert_eq!(s.push(&smile[..2]), "");
        assert_eq!(s.push(&smile[2..]), "🙂");
        // A byte that starts no character is replaced, and what follows comes out.
        assert_eq!(s.push(&[0xFF, b'b']), "\u{FFFD}b");
    }
}
