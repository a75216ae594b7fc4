//! A copy of the trained weights kept on the side: the weights a step's loss came from, and
//! the last ones whose loss was read back finite. Where the optimizer keeps the weights in
//! flat buffers (on the GPU), the copy has the same layout, so taking it is one copy per
//! buffer instead of one per parameter (nanochar's 76 a step), and each parameter's copy is a
//! view of it.

use crate::{no_grad, Result, Tensor};

pub(crate) struct Kept {
    /// (what holds weights: a flat buffer, or a parameter of its own; its copy).
    wholes: Vec<(Tensor, Tensor)>,
    /// Each parameter's copy, in the parameters' order.
    per_param: Vec<Tensor>,
}

impl Kept {
    /// A copy of `params` as they are now.
    pub fn new(params: &[(String, Tensor)]) -> Result<Kept> {
        no_grad(|| {
            let mut wholes: Vec<(Tensor, Tensor)> = Vec::new();
            let mut per_param = Vec::with_capacity(params.len());
            for (_, p) in params {
                let (holder, offset) = p.view_of().unwrap_or_else(|| (p.clone(), 0));
                let at = match wholes.iter().position(|(h, _)| h.id() == holder.id()) {
                    Some(at) => at,
                    None => {
                        let copy = holder.scale(1.0)?;
                        wholes.push((holder.clone(), copy));
                        wholes.len() - 1
                    }
                };
                let copy = &wholes[at].1;
                per_param.push(match holder.id() == p.id() {
                    true => copy.clone(),
                    false => copy.part(offset, p.shape()),
                });
            }
            Ok(Kept { wholes, per_param })
        })
    }

    /// Parameter `i`'s copy.
    pub fn param(&self, i: usize) -> &Tensor {
        &self.per_param[i]
    }

    /// Takes the weights as they are now.
    pub fn take(&self) -> Result<()> {
        for (holder, copy) in &self.wholes {
            copy.copy_from(holder)?;
        }
        Ok(())
    }

    /// Takes what `other`, a copy of the same weights, holds.
    pub fn take_from(&self, other: &Kept) -> Result<()> {
        for ((_, copy), (_, theirs)) in self.wholes.iter().zip(&other.wholes) {
            copy.copy_from(theirs)?;
        }
        Ok(())
    }

    /// Puts this copy back into the weights.
    pub fn put_back(&self) -> Result<()> {
        for (holder, copy) in &self.wholes {
            holder.copy_from(copy)?;
        }
        Ok(())
    }
}
