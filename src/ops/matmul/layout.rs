//! Where the matrices of a batched product lie in their buffers (shaders/matmul_out.wgsl's
//! layout parameters). A product of tensors has them dense, one after another. Attention's
//! products through the scores (src/ops/attention/scores.rs) read and write the heads in place,
//! as column blocks of the [B, T, width] tensors that hold them: no copies to gather the heads
//! and put them back (48 dispatches a step in nanochar, 1.1 ms on an H100).

use crate::error::{Error, Result};

/// The sizes of one batched product: `batches` products of [m, k] · [k, n].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Dims {
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) batches: usize,
}

impl Dims {
    /// The product's multiply-adds (saturating: a product too large to count is large).
    pub(crate) fn multiply_adds(&self) -> usize {
        self.m
            .saturating_mul(self.n)
            .saturating_mul(self.k)
            .saturating_mul(self.batches)
    }

    /// The (rows, cols) of A and B as stored: op(A) is m × k and op(B) k × n, each stored
    /// transposed where its flag says.
    pub(crate) fn stored(&self, (ta, tb): (bool, bool)) -> [(usize, usize); 2] {
        let stored = |t: bool, (r, c): (usize, usize)| if t { (c, r) } else { (r, c) };
        [stored(ta, (self.m, self.k)), stored(tb, (self.k, self.n))]
    }

    /// The 128 × 128 tiles over C, every batch's: the large tiles' and the matrix units'
    /// workgroups, K whole.
    pub(crate) fn large_tiles(&self) -> usize {
        self.m.div_ceil(128) * self.n.div_ceil(128) * self.batches
    }
}

/// Where the matrices of one operand lie: matrix z, head z % heads of group z / heads, starts
/// at `offset + group × batch + head × head` (`Views::heads`), and its stored rows lie `row`
/// apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Layout {
    pub(crate) offset: usize,
    pub(crate) batch: usize,
    pub(crate) head: usize,
    pub(crate) row: usize,
}

impl Layout {
    /// Matrices of stored rows `row` long, one after another `stride` apart (0: one matrix for
    /// every batch), for products of `heads` heads per group.
    pub(crate) fn dense(row: usize, stride: usize, heads: usize) -> Layout {
        Layout {
            offset: 0,
            batch: stride * heads,
            head: stride,
            row,
        }
    }

    /// The heads of column block `part` of a [groups, t, width] tensor, each head `d` columns
    /// of `heads` side by side in each block.
    pub(crate) fn heads_of(t: usize, width: usize, d: usize, heads: usize, part: usize) -> Layout {
        Layout {
            offset: part * heads * d,
            batch: t * width,
            head: d,
            row: width,
        }
    }

    /// Where matrix z starts.
    pub(crate) fn start(&self, z: usize, heads: usize) -> usize {
        self.offset + (z / heads) * self.batch + (z % heads) * self.head
    }

    /// Whether every matrix starts at a multiple of 4 and its rows lie a multiple of 4 apart,
    /// so that it can be read (or written) a vec4 at a time along its rows.
    pub(crate) fn in_fours(&self) -> bool {
        self.in_multiples_of(4)
    }

    /// Whether every matrix starts at a multiple of `n` and its rows lie a multiple of `n`
    /// apart.
    pub(crate) fn in_multiples_of(&self, n: usize) -> bool {
        [self.offset, self.batch, self.head, self.row]
            .iter()
            .all(|x| x.is_multiple_of(n))
    }

    /// One past the last element of `batches` matrices of `rows` stored rows of `cols`.
    fn end(&self, batches: usize, heads: usize, (rows, cols): (usize, usize)) -> usize {
        if batches == 0 || rows == 0 || cols == 0 {
            return 0;
        }
        // The largest start is at the last group's last head, or the last matrix.
        let last = (0..heads.min(batches))
            .map(|h| self.start(batches - 1 - h, heads))
            .max()
            .unwrap_or(0);
        last + (rows - 1) * self.row + cols
    }
}

/// The layouts of a product's A, B and C, whose batches come in groups of `heads`, and where
/// op(A)'s row sums go, if they are wanted (for A transposed, on the tiled kernels): this far
/// after the start of each matrix of C.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Views {
    pub(crate) heads: usize,
    pub(crate) a: Layout,
    pub(crate) b: Layout,
    pub(crate) c: Layout,
    pub(crate) row_sums: Option<usize>,
}

impl Views {
    /// Dense operands of `d`, A's batch stride `sa` and B's `sb` (0 to broadcast one matrix).
    pub(crate) fn dense(d: Dims, (ta, tb): (bool, bool), (sa, sb): (usize, usize)) -> Views {
        Views {
            heads: 1,
            a: Layout::dense(if ta { d.m } else { d.k }, sa, 1),
            b: Layout::dense(if tb { d.k } else { d.n }, sb, 1),
            c: Layout::dense(d.n, d.m * d.n, 1),
            row_sums: None,
        }
    }

    /// Whether C is dense and alone, so that K may be split: the split's partial products are
    /// stored densely and summed into C by a pass that knows no other layout.
    pub(super) fn splittable(&self, d: Dims) -> bool {
        self.heads == 1 && self.c == Layout::dense(d.n, d.m * d.n, 1) && self.row_sums.is_none()
    }

    /// Checks that every matrix lies within its buffer's `lens` (A, B, C) and that no two of
    /// a matrix's rows overlap.
    pub(crate) fn check(&self, d: Dims, (ta, tb): (bool, bool), lens: [usize; 3]) -> Result<()> {
        let [a, b] = d.stored((ta, tb));
        let shapes = [a, b, (d.m, d.n)];
        // The row sums, m of them after each matrix of C, stored 4 at a time.
        let sums_end = match self.row_sums {
            Some(at) if d.batches > 0 => {
                self.c.start(d.batches - 1, self.heads) + at + d.m.next_multiple_of(4)
            }
            _ => 0,
        };
        let layouts = [(self.a, 0), (self.b, 0), (self.c, sums_end)];
        for (((layout, sums_end), shape), len) in layouts.iter().zip(shapes).zip(lens) {
            let overlapping = shape.0 > 1 && shape.1 > layout.row;
            let end = layout.end(d.batches, self.heads, shape).max(*sums_end);
            if self.heads == 0 || overlapping || end > len {
                return Err(Error::Invalid {
                    op: "matmul",
                    why: format!(
                        "{} heads of {shape:?} matrices at {layout:?} do not fit {len} elements",
                        self.heads
                    ),
                });
            }
        }
        Ok(())
    }
}

/// op(A) · op(B) on the CPU, each matrix where `views` says, into `c` (the reference the GPU's
/// kernels are checked against).
pub(super) fn cpu_matmul(
    [a, b]: [&[f64]; 2],
    c: &mut [f64],
    d: Dims,
    (ta, tb): (bool, bool),
    views: Views,
) {
    let (m, n, k, heads) = (d.m, d.n, d.k, views.heads);
    let (la, lb, lc) = (views.a, views.b, views.c);
    for z in 0..d.batches {
        let (ab, bb, cb) = (la.start(z, heads), lb.start(z, heads), lc.start(z, heads));
        // A's rows and B's columns first copied out with K contiguous, so that each dot product
        // reads both in order (read in place, one of them strides across rows: the tests'
        // references of 8,192-row weight gradients took seconds each); the same sums, added in
        // the same order.
        let a_rows: Vec<f64> = (0..m)
            .flat_map(|i| {
                (0..k).map(move |l| a[ab + if ta { l * la.row + i } else { i * la.row + l }])
            })
            .collect();
        let b_cols: Vec<f64> = (0..n)
            .flat_map(|j| {
                (0..k).map(move |l| b[bb + if tb { j * lb.row + l } else { l * lb.row + j }])
            })
            .collect();
        for i in 0..m {
            let row = &a_rows[i * k..(i + 1) * k];
            for j in 0..n {
                let mut s = 0.0;
                for (av, bv) in row.iter().zip(&b_cols[j * k..(j + 1) * k]) {
                    s += av * bv;
                }
                c[cb + i * lc.row + j] = s;
            }
            if let Some(at) = views.row_sums {
                c[cb + at + i] = row.iter().sum();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_in_place_fit_their_tensor_exactly() {
        // q, k and v of 2 sequences of 5 positions, 3 heads of 4: [2, 5, 36].
        let (t, d, heads) = (5, 4, 3);
        let dims = Dims {
            m: t,
            n: d,
            k: t,
            batches: 2 * heads,
        };
        let views = |part| Views {
            heads,
            a: Layout::dense(t, t * t, heads),
            b: Layout::heads_of(t, 3 * heads * d, d, heads, part),
            c: Layout::heads_of(t, heads * d, d, heads, 0),
            row_sums: None,
        };
        let lens = [2 * heads * t * t, 2 * t * 3 * heads * d, 2 * t * heads * d];
        for part in 0..3 {
            assert!(views(part).check(dims, (false, false), lens).is_ok());
        }
        // The last head of v ends at the tensor's last element: one fewer overruns.
        let short = [lens[0], lens[1] - 1, lens[2]];
        assert!(views(2).check(dims, (false, false), short).is_err());
        assert!(views(1).check(dims, (false, false), short).is_ok());
        // Rows closer than a matrix is wide would overlap.
        let mut narrow = views(0);
        narrow.c.row = d - 1;
        assert!(narrow.check(dims, (false, false), lens).is_err());
    }
}
