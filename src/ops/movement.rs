//! Movement: reshape (no copy), permute/transpose, slice (strided too), concat and expand; pad
//! in `pad.rs`. Everything that moves data is one strided-copy kernel (copy.rs) with different
//! strides and offsets.

use super::copy::{copy_into, Copy};
use super::shape::{broadcast_shapes, broadcast_strides, strides};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::tensor::{numel, DType, Tensor};

/// A contiguous copy of `src` read through `src_strides` (and an offset) as `shape`.
fn gather(
    src: &Tensor,
    src_off: usize,
    src_strides: Vec<usize>,
    shape: &[usize],
    op: impl Backward + 'static,
) -> Result<Tensor> {
    let copy = Copy {
        src,
        src_off,
        src_strides,
        shape: shape.to_vec(),
        dst_off: 0,
        dst_strides: strides(shape),
    };
    let storage = copy_into(src.device(), numel(shape), &[copy])?;
    Ok(Tensor::from_op(
        shape.to_vec(),
        DType::F32,
        src.device(),
        storage,
        op,
    ))
}

/// The permutation that undoes `perm`.
fn inverse_permutation(perm: &[usize]) -> Vec<usize> {
    let mut inv = vec![0; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    inv
}

/// dx of a slice taking every `step`th element: the gradient placed back into zeros of the
/// input's shape.
fn slice_backward(
    shape: &[usize],
    axis: usize,
    (start, step): (usize, usize),
    g: &Tensor,
) -> Result<Tensor> {
    let st = strides(shape);
    let mut dst_strides = st.clone();
    dst_strides[axis] *= step;
    let copy = Copy {
        src: g,
        src_off: 0,
        src_strides: strides(g.shape()),
        shape: g.shape().to_vec(),
        dst_off: start * st[axis],
        dst_strides,
    };
    let storage = copy_into(g.device(), numel(shape), &[copy])?;
    Ok(Tensor::from_storage(
        shape.to_vec(),
        DType::F32,
        g.device(),
        storage,
    ))
}

/// A reshape, as recorded for backward: the gradient takes the input's shape back.
struct Reshape {
    x: Tensor,
}

impl Backward for Reshape {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![g.reshape(self.x.shape())?])
    }
    /// The same values: a ReLU's output reshaped (a linear layer's rows folded) is one still,
    /// and a gradient through its ReLU stays so reshaped.
    fn stores_through_relu(&self) -> bool {
        crate::autograd::made_through_relu(&self.x)
    }
    fn first_gradient_through_relu(&self, g_through_relu: bool) -> bool {
        g_through_relu
    }
    /// An f16 gradient reshaped is one still, for an input whose rule takes it so.
    fn reads_f16_gradient(&self) -> bool {
        crate::autograd::takes_f16_gradient(&self.x)
    }
}

/// A permutation of axes, as recorded for backward: the gradient is permuted back.
struct Permute {
    x: Tensor,
    perm: Vec<usize>,
}

impl Backward for Permute {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![g.permute(&inverse_permutation(&self.perm))?])
    }
}

/// A slice along one axis, as recorded for backward.
struct Slice {
    x: Tensor,
    axis: usize,
    start: usize,
    step: usize,
}

impl Backward for Slice {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![slice_backward(
            self.x.shape(),
            self.axis,
            (self.start, self.step),
            g,
        )?])
    }
}

/// A concat along one axis, as recorded for backward: each input gets its slice of the
/// gradient.
struct Concat {
    xs: Vec<Tensor>,
    axis: usize,
}

impl Backward for Concat {
    fn inputs(&self) -> Inputs<'_> {
        self.xs.iter().collect()
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let mut start = 0;
        let mut out = Vec::new();
        for x in &self.xs {
            let len = x.shape()[self.axis];
            out.push(g.slice(self.axis as isize, start, len)?);
            start += len;
        }
        Ok(out)
    }
}

/// A broadcast, as recorded for backward: the gradient is summed back to the input's shape.
struct Expand {
    x: Tensor,
}

impl Backward for Expand {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![g.sum_to_shape(self.x.shape())?])
    }
}

impl Tensor {
    /// The same data with a new shape of the same size; never copies.
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        if numel(shape) != self.numel() {
            return Err(Error::Shape {
                op: "reshape",
                a: self.shape().to_vec(),
                b: shape.to_vec(),
                why: format!("{} elements cannot become {}", self.numel(), numel(shape)),
            });
        }
        Ok(self.view(shape, Some(Reshape { x: self.clone() })))
    }

    /// Reorders the dimensions: output dimension i is input dimension perm[i].
    pub fn permute(&self, perm: &[usize]) -> Result<Tensor> {
        let mut seen = vec![false; self.rank()];
        for &p in perm {
            if p >= self.rank() || std::mem::replace(&mut seen[p], true) {
                return Err(Error::Invalid {
                    op: "permute",
                    why: format!("{perm:?} is not a permutation of {} axes", self.rank()),
                });
            }
        }
        if perm.len() != self.rank() {
            return Err(Error::Invalid {
                op: "permute",
                why: format!("{perm:?} is not a permutation of {} axes", self.rank()),
            });
        }
        let own = strides(self.shape());
        let shape: Vec<usize> = perm.iter().map(|&p| self.shape()[p]).collect();
        let src_strides = perm.iter().map(|&p| own[p]).collect();
        gather(
            self,
            0,
            src_strides,
            &shape,
            Permute {
                x: self.clone(),
                perm: perm.to_vec(),
            },
        )
    }

    /// Swaps two dimensions.
    pub fn transpose(&self, a: isize, b: isize) -> Result<Tensor> {
        let a = super::shape::axis_index("transpose", a, self.rank())?;
        let b = super::shape::axis_index("transpose", b, self.rank())?;
        let mut perm: Vec<usize> = (0..self.rank()).collect();
        perm.swap(a, b);
        self.permute(&perm)
    }

    /// Elements start..start+len along `axis`.
    pub fn slice(&self, axis: isize, start: usize, len: usize) -> Result<Tensor> {
        self.slice_step(axis, start, len, 1)
    }

    /// `len` elements along `axis` from `start`, every `step`th: `x[start::step]` in Python,
    /// cut to `len`.
    pub fn slice_step(&self, axis: isize, start: usize, len: usize, step: usize) -> Result<Tensor> {
        let a = super::shape::axis_index("slice", axis, self.rank())?;
        let size = self.shape()[a];
        let invalid = |why: String| Error::Invalid { op: "slice", why };
        if step == 0 {
            return Err(invalid("the step must be at least 1".into()));
        }
        let end = if len == 0 {
            start
        } else {
            start + (len - 1) * step + 1
        };
        if start > size || end > size {
            return Err(invalid(format!(
                "{len} elements from {start} every {step} reach {end}, outside axis {a} of size {size}"
            )));
        }
        let mut shape = self.shape().to_vec();
        shape[a] = len;
        let st = strides(self.shape());
        let mut src_strides = st.clone();
        src_strides[a] *= step;
        gather(
            self,
            start * st[a],
            src_strides,
            &shape,
            Slice {
                x: self.clone(),
                axis: a,
                start,
                step,
            },
        )
    }

    /// Joins tensors along `axis`; all other dimensions must match.
    pub fn concat(xs: &[Tensor], axis: isize) -> Result<Tensor> {
        let first = xs.first().ok_or(Error::Invalid {
            op: "concat",
            why: "no tensors to join".into(),
        })?;
        let a = super::shape::axis_index("concat", axis, first.rank())?;
        let mut shape = first.shape().to_vec();
        shape[a] = 0;
        for x in xs {
            x.same_device("concat", first)?;
            let fits = x.rank() == first.rank()
                && (0..x.rank()).all(|d| d == a || x.shape()[d] == first.shape()[d]);
            if !fits {
                return Err(Error::Shape {
                    op: "concat",
                    a: first.shape().to_vec(),
                    b: x.shape().to_vec(),
                    why: format!("they differ off axis {a}"),
                });
            }
            shape[a] += x.shape()[a];
        }
        let out_strides = strides(&shape);
        let mut offset = 0;
        let copies: Vec<Copy> = xs
            .iter()
            .map(|x| {
                let c = Copy {
                    src: x,
                    src_off: 0,
                    src_strides: strides(x.shape()),
                    shape: x.shape().to_vec(),
                    dst_off: offset * out_strides[a],
                    dst_strides: out_strides.clone(),
                };
                offset += x.shape()[a];
                c
            })
            .collect();
        let storage = copy_into(first.device(), numel(&shape), &copies)?;
        Ok(Tensor::from_op(
            shape,
            DType::F32,
            first.device(),
            storage,
            Concat {
                xs: xs.to_vec(),
                axis: a,
            },
        ))
    }

    /// Broadcasts to `shape` (NumPy rules), materialised.
    pub fn expand(&self, shape: &[usize]) -> Result<Tensor> {
        let full = broadcast_shapes("expand", self.shape(), shape)?;
        if full != shape {
            return Err(Error::Shape {
                op: "expand",
                a: self.shape().to_vec(),
                b: shape.to_vec(),
                why: "cannot broadcast".into(),
            });
        }
        if self.shape() == shape {
            return Ok(self.clone());
        }
        gather(
            self,
            0,
            broadcast_strides(self.shape(), shape),
            shape,
            Expand { x: self.clone() },
        )
    }
}
