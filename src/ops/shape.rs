//! Shape arithmetic shared by the ops: broadcasting, strides, and packing shapes into kernel
//! parameters.

use crate::error::{Error, Result};

/// The most dimensions a kernel that walks strides accepts.
pub(crate) const MAX_RANK: usize = 8;

/// The NumPy broadcast of two shapes.
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::Shape {
                    op,
                    a: a.to_vec(),
                    b: b.to_vec(),
                    why: format!("dimension {i} is {da} vs {db}"),
                })
            }
        };
    }
    Ok(out)
}

/// Row-major strides of a contiguous shape.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Strides for reading `shape` as if broadcast to `out` (rank of `out`): 0 where broadcast.
pub(crate) fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let own = strides(shape);
    let pad = out.len() - shape.len();
    (0..out.len())
        .map(|i| {
            if i < pad || shape[i - pad] == 1 {
                0
            } else {
                own[i - pad]
            }
        })
        .collect()
}

/// Up to MAX_RANK values as the shaders take them: `array<vec4<u32>, 2>`.
pub(crate) type Packed = [[u32; 4]; MAX_RANK / 4];

/// Packs up to MAX_RANK values, padded with 0.
pub(crate) fn pack(values: &[usize]) -> Packed {
    let mut out = [[0u32; 4]; MAX_RANK / 4];
    for (i, v) in values.iter().enumerate().take(MAX_RANK) {
        out[i / 4][i % 4] = *v as u32;
    }
    out
}

/// Checks a rank against what strided kernels accept.
pub(crate) fn check_rank(op: &'static str, shape: &[usize]) -> Result<()> {
    if shape.len() > MAX_RANK {
        return Err(Error::Invalid {
            op,
            why: format!("rank {} is over the {MAX_RANK} supported", shape.len()),
        });
    }
    Ok(())
}

/// The offset of each element of `shape` (row-major order) under `strides`.
pub(crate) fn strided_offsets(shape: &[usize], strides: &[usize]) -> Vec<usize> {
    let n: usize = shape.iter().product();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(idx.iter().zip(strides).map(|(i, s)| i * s).sum());
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}

/// Resolves a possibly negative axis.
pub(crate) fn axis_index(op: &'static str, axis: isize, rank: usize) -> Result<usize> {
    let a = if axis < 0 { axis + rank as isize } else { axis };
    if a < 0 || a as usize >= rank {
        return Err(Error::Invalid {
            op,
            why: format!("axis {axis} is out of range for rank {rank}"),
        });
    }
    Ok(a as usize)
}
