//! Your own 2-D points: a CSV file of x, y and a label (0 or 1) per line, scaled into the
//! plane the playground draws, shuffled and split like the built-in sets. Each kind of bad
//! file gets a sentence naming the line and what is wrong with it.

use super::{split_at_fraction, Labelled, Split};
use crate::{Error, Result};
use rand::{rngs::SmallRng, seq::SliceRandom, SeedableRng};

/// The fewest and most points a file may hold: enough to keep some for testing, few enough
/// to draw every one.
pub const MIN_POINTS: usize = 20;
pub const MAX_POINTS: usize = 100_000;
/// The largest |coordinate| after scaling: the plane drawn is [-1.25, 1.25]².
const REACH: f32 = 1.0;

fn bad(why: String) -> Error {
    Error::Invalid { op: "points", why }
}

/// The points of a CSV text (a header line of names is skipped), scaled so that the largest
/// |coordinate| is 1, shuffled by `seed` and split with `val_fraction` held out. Returns the
/// data and the scale applied.
pub fn points_from_csv(text: &str, val_fraction: f64, seed: u64) -> Result<(Labelled, f32)> {
    let mut x = Vec::new();
    let mut y = Vec::new();
    // A byte-order mark, as some spreadsheets write, is no part of the first value.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split([',', ';', '\t']).map(str::trim).collect();
        let is_header = x.is_empty() && i == 0 && fields.iter().any(|f| f.parse::<f64>().is_err());
        if is_header {
            continue;
        }
        let (px, py, label) = row(&fields, i + 1)?;
        x.extend([px, py]);
        y.push(label);
        if y.len() > MAX_POINTS {
            return Err(bad(format!("the file holds more than {MAX_POINTS} points")));
        }
    }
    check_counts(&y)?;
    let scale = REACH / x.iter().fold(f32::MIN_POSITIVE, |m, v| m.max(v.abs()));
    let n = y.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(seed));
    let all = Split {
        x: order
            .iter()
            .flat_map(|&i| [x[2 * i] * scale, x[2 * i + 1] * scale])
            .collect(),
        y: order.iter().map(|&i| y[i]).collect(),
        features: 2,
    };
    let (train, val) = split_at_fraction(all, val_fraction);
    Ok((
        Labelled {
            train,
            val,
            classes: 2,
        },
        scale,
    ))
}

/// One line's x, y and label.
fn row(fields: &[&str], line: usize) -> Result<(f32, f32, u32)> {
    if fields.len() != 3 {
        return Err(bad(format!(
            "line {line} has {} values; each line needs three: x, y and a label (0 or 1)",
            fields.len()
        )));
    }
    let number = |f: &str, what: &str| -> Result<f32> {
        let v: f64 = f
            .parse()
            .map_err(|_| bad(format!("line {line}: {what} \"{f}\" is not a number")))?;
        if !v.is_finite() || v.abs() > f32::MAX as f64 {
            return Err(bad(format!(
                "line {line}: {what} \"{f}\" is not a finite number"
            )));
        }
        Ok(v as f32)
    };
    let label = match fields[2] {
        "0" | "0.0" => 0,
        "1" | "1.0" => 1,
        other => {
            return Err(bad(format!(
            "line {line}: the label \"{other}\" is not 0 or 1 (the playground learns two classes)"
        )))
        }
    };
    Ok((number(fields[0], "x")?, number(fields[1], "y")?, label))
}

fn check_counts(y: &[u32]) -> Result<()> {
    if y.len() < MIN_POINTS {
        return Err(bad(format!(
            "the file holds {} points; at least {MIN_POINTS} are needed (a fifth are kept aside for testing)",
            y.len()
        )));
    }
    let ones = y.iter().filter(|&&l| l == 1).count();
    if ones == 0 || ones == y.len() {
        let only = if ones == 0 { 0 } else { 1 };
        return Err(bad(format!(
            "every point has the label {only}; a boundary needs points of both classes"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(n: usize) -> String {
        (0..n)
            .map(|i| format!("{},{},{}\n", i as f32 * 2.0, -(i as f32), i % 2))
            .collect()
    }

    #[test]
    fn a_file_of_points_is_scaled_shuffled_and_split() {
        let text = format!("x,y,label\n{}", grid(50));
        let (data, scale) = points_from_csv(&text, 0.2, 1).unwrap();
        assert_eq!(
            (data.train.len(), data.val.len(), data.classes),
            (40, 10, 2)
        );
        assert_eq!(scale, 1.0 / 98.0, "the farthest coordinate, 98, becomes 1");
        let all: Vec<f32> = data.train.x.iter().chain(&data.val.x).copied().collect();
        assert_eq!(all.iter().fold(0.0f32, |m, v| m.max(v.abs())), 1.0);
        // Every point kept its label: x = 2i scaled, label i % 2.
        for (p, l) in data.train.x.chunks(2).zip(&data.train.y) {
            let i = (p[0] / scale / 2.0).round() as usize;
            assert_eq!(*l as usize, i % 2);
        }
    }

    #[test]
    fn a_byte_order_mark_and_windows_line_ends_are_read_through() {
        let text = format!("\u{feff}{}", grid(30).replace('\n', "\r\n"));
        let (data, _) = points_from_csv(&text, 0.2, 1).unwrap();
        assert_eq!(
            data.train.len() + data.val.len(),
            30,
            "no line lost, the first included"
        );
    }

    #[test]
    fn each_bad_file_gets_its_own_sentence() {
        let cases = [
            ("", "holds 0 points"),
            ("1,2\n", "line 1 has 2 values"),
            (
                &format!("{}0,abc,1\n", grid(30)),
                "line 31: y \"abc\" is not a number",
            ),
            (
                &format!("{}1e999,0,1\n", grid(30)),
                "line 31: x \"1e999\" is not a finite number",
            ),
            (
                &format!("{}0,0,2\n", grid(30)),
                "line 31: the label \"2\" is not 0 or 1",
            ),
            (&grid(5), "holds 5 points; at least 20"),
            (&"1,1,1\n".repeat(30), "every point has the label 1"),
            (&"1,1,0\n".repeat(MAX_POINTS + 1), "more than 100000 points"),
        ];
        for (text, expect) in cases {
            let err = points_from_csv(text, 0.2, 0).unwrap_err().to_string();
            assert!(err.contains(expect), "expected {expect:?}, got {err:?}");
        }
    }
}
