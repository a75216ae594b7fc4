//! Elementwise binary ops with NumPy broadcasting; backward sums over broadcast dimensions.

use super::shape::{
    broadcast_shapes, broadcast_strides, check_rank, pack, strided_offsets, Packed,
};
use super::{gpu_of, launch1};
use crate::autograd::{Backward, Inputs};
use crate::error::Result;
use crate::gpu::Kernel;
use crate::tensor::{DType, Host, Storage, Tensor};

crate::kernel_params! {
    /// shaders/binary.wgsl: `n` elements walked over `shape` (rank `rank`), with the strides
    /// of a and b.
    struct BinaryParams {
        n: u32,
        rank: u32,
        _pad: [u32; 2],
        shape: Packed,
        sa: Packed,
        sb: Packed,
    }
}

/// A broadcasting binary op. `Ge` (1 where a >= b, else 0) is a mask with no gradient of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Maximum,
    Ge,
}

impl Binary {
    fn wgsl(self) -> &'static str {
        match self {
            Binary::Add => "a + b",
            Binary::Sub => "a - b",
            Binary::Mul => "a * b",
            Binary::Div => "a / b",
            Binary::Maximum => "max(a, b)",
            Binary::Ge => "select(0.0, 1.0, a >= b)",
        }
    }

    fn cpu(self, a: f64, b: f64) -> f64 {
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Maximum => a.max(b),
            Binary::Ge => (a >= b) as u8 as f64,
        }
    }
}

fn binary(a: &Tensor, b: &Tensor, kind: Binary) -> Result<Tensor> {
    let name = "binary op";
    a.expect_dtype(name, DType::F32)?;
    b.expect_dtype(name, DType::F32)?;
    a.same_device(name, b)?;
    let out_shape = broadcast_shapes(name, a.shape(), b.shape())?;
    check_rank(name, &out_shape)?;
    // Equal shapes need no index arithmetic: walk them as one flat dimension.
    let (walk, sa, sb) = if a.shape() == b.shape() {
        (vec![a.numel()], vec![1], vec![1])
    } else {
        (
            out_shape.clone(),
            broadcast_strides(a.shape(), &out_shape),
            broadcast_strides(b.shape(), &out_shape),
        )
    };
    let storage = match gpu_of(a.device()) {
        None => {
            let (av, bv) = (a.host_f64(name)?, b.host_f64(name)?);
            let ia = strided_offsets(&walk, &sa);
            let ib = strided_offsets(&walk, &sb);
            Storage::Host(Host::F(
                ia.iter()
                    .zip(&ib)
                    .map(|(&i, &j)| kind.cpu(av[i], bv[j]))
                    .collect(),
            ))
        }
        Some(gpu) => {
            let kernel = Kernel::new("binary", include_str!("../../shaders/binary.wgsl"), "main")
                .slot("EXPR", kind.wgsl());
            let n = walk.iter().product::<usize>();
            let params = BinaryParams {
                n: n as u32,
                rank: walk.len() as u32,
                _pad: [0; 2],
                shape: pack(&walk),
                sa: pack(&sa),
                sb: pack(&sb),
            };
            launch1(gpu, &kernel, &params, &[a, b], n, gpu.groups_elementwise(n))?
        }
    };
    let op = BinaryOp {
        kind,
        a: a.clone(),
        b: b.clone(),
    };
    Ok(Tensor::from_op(
        out_shape,
        DType::F32,
        a.device(),
        storage,
        op,
    ))
}

/// A binary op as recorded for backward.
struct BinaryOp {
    kind: Binary,
    a: Tensor,
    b: Tensor,
}

impl Backward for BinaryOp {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.a, &self.b]
    }
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        binary_backward(self.kind, &self.a, &self.b, out, g)
    }
}

/// Gradients of both inputs, each summed down to its own (pre-broadcast) shape.
fn binary_backward(
    kind: Binary,
    a: &Tensor,
    b: &Tensor,
    out: &Tensor,
    g: &Tensor,
) -> Result<Vec<Tensor>> {
    let (ga, gb) = match kind {
        Binary::Add => (g.clone(), g.clone()),
        Binary::Sub => (g.clone(), g.neg()?),
        Binary::Mul => (g.mul(b)?, g.mul(a)?),
        Binary::Div => (g.div(b)?, g.mul(out)?.div(b)?.neg()?),
        Binary::Maximum => {
            // Ties send the gradient to `a`.
            let to_a = g.mul(&a.ge_mask(b)?)?;
            let to_b = g.sub(&to_a)?;
            (to_a, to_b)
        }
        Binary::Ge => (g.scale(0.0)?, g.scale(0.0)?),
    };
    Ok(vec![
        ga.sum_to_shape(a.shape())?,
        gb.sum_to_shape(b.shape())?,
    ])
}

impl Tensor {
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        binary(self, other, Binary::Add)
    }
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        binary(self, other, Binary::Sub)
    }
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        binary(self, other, Binary::Mul)
    }
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        binary(self, other, Binary::Div)
    }
    /// Elementwise maximum; at ties the gradient goes to `self`.
    pub fn maximum(&self, other: &Tensor) -> Result<Tensor> {
        binary(self, other, Binary::Maximum)
    }
    /// 1 where self >= other, else 0 (broadcasting); it has no gradient.
    pub fn ge_mask(&self, other: &Tensor) -> Result<Tensor> {
        binary(self, other, Binary::Ge)
    }
}
