//! A drawing made into a digit as MNIST's were made: the ink's bounding box scaled to fit a
//! 20 × 20 box (keeping its shape), then placed on the 28 × 28 image so that its centre of mass
//! lies at the centre. A model trained on MNIST expects exactly this; a stroke fed as drawn
//! (off-centre, too large or too small) is read poorly.

use super::DIGIT_SIDE;

/// The side of the box the ink's bounding box is scaled to fit.
const INK_BOX: usize = 20;
/// Ink fainter than this does not count for the bounding box (antialiasing at the edges).
const INK_FLOOR: f32 = 0.05;
/// Samples per side within each output pixel when scaling: the area average of the source.
const SUPERSAMPLE: usize = 4;

/// The ink of a `w` × `h` drawing (row by row, 0 paper to 1 ink) as a 28 × 28 digit in
/// [0, 1], or None when there is no ink.
pub fn digit_from_ink(ink: &[f32], w: usize, h: usize) -> Option<Vec<f32>> {
    let (x0, y0, x1, y1) = bounding_box(ink, w, h)?;
    let (bw, bh) = (x1 - x0 + 1, y1 - y0 + 1);
    let scale = INK_BOX as f32 / bw.max(bh) as f32;
    let (sw, sh) = (
        ((bw as f32 * scale).round() as usize).clamp(1, INK_BOX),
        ((bh as f32 * scale).round() as usize).clamp(1, INK_BOX),
    );
    let small = resample(ink, w, (x0, y0), (bw, bh), (sw, sh));
    let peak = small.iter().copied().fold(0.0, f32::max);
    if peak <= 0.0 {
        return None;
    }
    let (cx, cy) = centre_of_mass(&small, sw);
    let centre = DIGIT_SIDE as f32 / 2.0;
    // Shift so the centre of mass lands on the image's centre, keeping the ink inside.
    let shift = |c: f32, size: usize| {
        ((centre - c).round() as isize).clamp(0, (DIGIT_SIDE - size) as isize) as usize
    };
    let (dx, dy) = (shift(cx, sw), shift(cy, sh));
    let mut out = vec![0.0; DIGIT_SIDE * DIGIT_SIDE];
    for y in 0..sh {
        for x in 0..sw {
            out[(y + dy) * DIGIT_SIDE + x + dx] = (small[y * sw + x] / peak).min(1.0);
        }
    }
    Some(out)
}

/// The smallest box (x0, y0, x1, y1), inclusive, holding all ink above the floor.
fn bounding_box(ink: &[f32], w: usize, h: usize) -> Option<(usize, usize, usize, usize)> {
    let mut found: Option<(usize, usize, usize, usize)> = None;
    for y in 0..h {
        for x in 0..w {
            if ink[y * w + x] > INK_FLOOR {
                let b = found.get_or_insert((x, y, x, y));
                *b = (b.0.min(x), b.1.min(y), b.2.max(x), b.3.max(y));
            }
        }
    }
    found
}

/// The box at `from` of size `size` in a `w`-wide image, scaled to `to` by averaging the
/// source over each output pixel's area.
fn resample(
    ink: &[f32],
    w: usize,
    from: (usize, usize),
    size: (usize, usize),
    to: (usize, usize),
) -> Vec<f32> {
    let (step_x, step_y) = (size.0 as f32 / to.0 as f32, size.1 as f32 / to.1 as f32);
    let n = SUPERSAMPLE as f32;
    let mut out = Vec::with_capacity(to.0 * to.1);
    for ty in 0..to.1 {
        for tx in 0..to.0 {
            let mut sum = 0.0;
            for sy in 0..SUPERSAMPLE {
                for sx in 0..SUPERSAMPLE {
                    let x = from.0 as f32 + (tx as f32 + (sx as f32 + 0.5) / n) * step_x;
                    let y = from.1 as f32 + (ty as f32 + (sy as f32 + 0.5) / n) * step_y;
                    sum += ink[y as usize * w + x as usize];
                }
            }
            out.push(sum / (n * n));
        }
    }
    out
}

/// The centre of mass (x, y) of a `w`-wide image, in pixel indices (MNIST put it at 14, 14).
fn centre_of_mass(img: &[f32], w: usize) -> (f32, f32) {
    let (mut total, mut sx, mut sy) = (0.0, 0.0, 0.0);
    for (i, &v) in img.iter().enumerate() {
        total += v;
        sx += v * (i % w) as f32;
        sy += v * (i / w) as f32;
    }
    (sx / total, sy / total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_ink_is_no_digit() {
        assert_eq!(digit_from_ink(&[0.0; 100], 10, 10), None);
        assert_eq!(digit_from_ink(&[0.01; 100], 10, 10), None);
    }

    #[test]
    fn a_bar_in_a_corner_is_scaled_to_20_pixels_and_centred() {
        // A 60 × 12 bar in the top-left corner of a 140 × 140 pad.
        let (w, h) = (140, 140);
        let mut ink = vec![0.0; w * h];
        for y in 2..14 {
            for x in 3..63 {
                ink[y * w + x] = 1.0;
            }
        }
        let d = digit_from_ink(&ink, w, h).unwrap();
        let rows: Vec<usize> = (0..28)
            .filter(|&y| d[y * 28..(y + 1) * 28].iter().any(|&v| v > 0.5))
            .collect();
        let cols: Vec<usize> = (0..28)
            .filter(|&x| (0..28).any(|y| d[y * 28 + x] > 0.5))
            .collect();
        assert_eq!(cols.len(), 20, "the long side fills the 20-pixel box");
        assert_eq!(
            rows.len(),
            4,
            "the short side keeps the shape: 12 / 60 × 20"
        );
        assert_eq!(
            (cols[0], cols[19]),
            (5, 24),
            "centred across (its middle, 9.5, at 14 rounds up)"
        );
        assert_eq!((rows[0], rows[3]), (13, 16), "centred down");
        assert_eq!(d.iter().copied().fold(0.0, f32::max), 1.0);
    }

    #[test]
    fn an_off_centre_ink_mass_is_moved_to_the_middle() {
        let (w, h) = (50, 50);
        let mut ink = vec![0.0; w * h];
        // An L: heavier on the left, so the centre of mass, not the box, sets the shift.
        for y in 5..45 {
            for x in 5..15 {
                ink[y * w + x] = 1.0;
            }
        }
        for x in 15..45 {
            for y in 35..45 {
                ink[y * w + x] = 1.0;
            }
        }
        let d = digit_from_ink(&ink, w, h).unwrap();
        let (cx, cy) = centre_of_mass(&d, 28);
        assert!(
            (cx - 14.0).abs() <= 0.5 && (cy - 14.0).abs() <= 0.5,
            "{cx}, {cy}"
        );
    }

    #[test]
    fn a_test_digit_drawn_large_and_off_centre_comes_back_as_it_was() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/web/data/digits.bin.gz");
        let data = crate::data::digits_from_gzip(&std::fs::read(path).unwrap()).unwrap();
        let side = DIGIT_SIDE;
        for i in 0..20 {
            let digit = &data.val.x[i * side * side..(i + 1) * side * side];
            // Drawn four times as large at the right edge of a 200 × 200 pad.
            let (w, scale, at) = (200, 4, (85, 20));
            let mut ink = vec![0.0; w * w];
            for y in 0..side * scale {
                for x in 0..side * scale {
                    ink[(y + at.1) * w + x + at.0] = digit[(y / scale) * side + x / scale];
                }
            }
            let back = digit_from_ink(&ink, w, w).unwrap();
            let peak = digit.iter().copied().fold(0.0, f32::max);
            let diff: f32 = back
                .iter()
                .zip(digit)
                .map(|(a, b)| (a - b / peak).abs())
                .sum();
            let ink_total: f32 = digit.iter().map(|v| v / peak).sum();
            assert!(
                diff < 0.05 * ink_total,
                "digit {i}: differs by {diff} of {ink_total}"
            );
        }
    }
}
