//! Constant padding along one axis: `before` and `after` elements of `value` around the
//! tensor. Forward is the strided copy into a buffer filled with the value; backward is the
//! slice of the gradient where the input went.

use super::copy::{copy_over, Copy};
use super::shape::strides;
use crate::autograd::{Backward, Inputs};
use crate::error::Result;
use crate::tensor::{numel, DType, Tensor};

/// A pad as recorded for backward.
struct Pad {
    x: Tensor,
    axis: usize,
    before: usize,
}

impl Backward for Pad {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let len = self.x.shape()[self.axis];
        Ok(vec![g.slice(self.axis as isize, self.before, len)?])
    }
}

impl Tensor {
    /// `before` elements of `value` ahead of the tensor along `axis` and `after` behind it:
    /// `torch.nn.functional.pad` with mode "constant", on one axis.
    pub fn pad(&self, axis: isize, (before, after): (usize, usize), value: f32) -> Result<Tensor> {
        let a = super::shape::axis_index("pad", axis, self.rank())?;
        let mut shape = self.shape().to_vec();
        shape[a] += before + after;
        let out_strides = strides(&shape);
        let copy = Copy {
            src: self,
            src_off: 0,
            src_strides: strides(self.shape()),
            shape: self.shape().to_vec(),
            dst_off: before * out_strides[a],
            dst_strides: out_strides,
        };
        let storage = copy_over(self.device(), numel(&shape), value, &[copy])?;
        Ok(Tensor::from_op(
            shape,
            DType::F32,
            self.device(),
            storage,
            Pad {
                x: self.clone(),
                axis: a,
                before,
            },
        ))
    }
}
