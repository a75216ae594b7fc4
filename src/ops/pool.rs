//! 2-D max pooling (NCHW, no padding), backward through the arg-max of each window.

use super::{gpu_of, launch, launch1};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::Kernel;
use crate::tensor::{DType, Host, Storage, Tensor};

/// (planes, h, w, ho, wo, k, stride) of a pooling.
fn sizes(x: &Tensor, k: usize, stride: usize) -> Result<[usize; 7]> {
    if x.rank() != 4 {
        return Err(Error::Invalid {
            op: "maxpool2d",
            why: format!("the input must be [N, C, H, W], got {:?}", x.shape()),
        });
    }
    let (h, w) = (x.shape()[2], x.shape()[3]);
    if k == 0 || stride == 0 || k > h || k > w {
        return Err(Error::Invalid {
            op: "maxpool2d",
            why: format!("a {k}×{k} window with stride {stride} does not fit {h}×{w}"),
        });
    }
    Ok([
        x.shape()[0] * x.shape()[1],
        h,
        w,
        (h - k) / stride + 1,
        (w - k) / stride + 1,
        k,
        stride,
    ])
}

crate::kernel_params! {
    /// shaders/maxpool2d.wgsl and maxpool2d_backward.wgsl: the sizes of `sizes`.
    struct PoolParams { planes: u32, h: u32, w: u32, ho: u32, wo: u32, k: u32, stride: u32 }
}

fn params(s: &[usize; 7]) -> PoolParams {
    let [planes, h, w, ho, wo, k, stride] = s.map(|v| v as u32);
    PoolParams {
        planes,
        h,
        w,
        ho,
        wo,
        k,
        stride,
    }
}

/// Max pooling, as recorded for backward, with the element each window picked.
struct MaxPool2d {
    x: Tensor,
    argmax: Tensor,
    k: usize,
    stride: usize,
}

impl Backward for MaxPool2d {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let through_relu = crate::autograd::made_through_relu(&self.x);
        let dx = maxpool2d_backward(
            &self.x,
            &self.argmax,
            (self.k, self.stride),
            g,
            through_relu,
        )?;
        Ok(vec![dx])
    }
    /// Over a ReLU's output (a convolution's, `Tensor::conv2d_relu`), the pass zeroes the
    /// gradient where the input is 0, and the convolution's rule skips its own pass.
    fn first_gradient_through_relu(&self, _g_through_relu: bool) -> bool {
        crate::autograd::made_through_relu(&self.x)
    }
}

/// dx of max pooling: each window's gradient goes to the element it picked; with
/// `through_relu` none where x is 0 or less.
fn maxpool2d_backward(
    x: &Tensor,
    argmax: &Tensor,
    (k, stride): (usize, usize),
    g: &Tensor,
    through_relu: bool,
) -> Result<Tensor> {
    let (ho, wo) = (g.shape()[2], g.shape()[3]);
    let (h, w) = (x.shape()[2], x.shape()[3]);
    let planes = x.shape()[0] * x.shape()[1];
    let storage = match gpu_of(x.device()) {
        None => {
            let (idx, gv) = (
                argmax.host_u32("maxpool2d backward")?,
                g.host_f64("maxpool2d backward")?,
            );
            let mut dx = vec![0.0; x.numel()];
            for (o, (&at, &gr)) in idx.iter().zip(&gv).enumerate() {
                dx[(o / (ho * wo)) * h * w + at as usize] += gr;
            }
            if through_relu {
                let xv = x.host_f64("maxpool2d backward")?;
                dx.iter_mut()
                    .zip(xv)
                    .for_each(|(d, x)| *d = if x > 0.0 { *d } else { 0.0 });
            }
            Storage::Host(Host::F(dx))
        }
        Some(gpu) => {
            let kernel = Kernel::new(
                "maxpool2d_backward",
                include_str!("../../shaders/maxpool2d_backward.wgsl"),
                "main",
            )
            .constant("THROUGH_RELU", through_relu);
            let p = params(&[planes, h, w, ho, wo, k, stride]);
            let groups = gpu.groups_elementwise(x.numel());
            launch1(gpu, &kernel, &p, &[argmax, g, x], x.numel(), groups)?
        }
    };
    Ok(Tensor::from_storage(
        x.shape().to_vec(),
        DType::F32,
        x.device(),
        storage,
    ))
}

impl Tensor {
    /// Max over k×k windows moving by `stride`, on a [N, C, H, W] input.
    pub fn maxpool2d(&self, k: usize, stride: usize) -> Result<Tensor> {
        self.expect_dtype("maxpool2d", DType::F32)?;
        let s = sizes(self, k, stride)?;
        let [planes, h, w, ho, wo, _, _] = s;
        let (y, argmax) = match gpu_of(self.device()) {
            None => {
                let x = self.host_f64("maxpool2d")?;
                let (mut y, mut idx) = (Vec::new(), Vec::new());
                for p in 0..planes {
                    for oy in 0..ho {
                        for ox in 0..wo {
                            let at =
                                |ky: usize, kx: usize| (oy * stride + ky) * w + ox * stride + kx;
                            let mut best = at(0, 0);
                            for ky in 0..k {
                                for kx in 0..k {
                                    if x[p * h * w + at(ky, kx)] > x[p * h * w + best] {
                                        best = at(ky, kx);
                                    }
                                }
                            }
                            y.push(x[p * h * w + best]);
                            idx.push(best as u32);
                        }
                    }
                }
                (Storage::Host(Host::F(y)), Storage::Host(Host::U(idx)))
            }
            Some(gpu) => {
                let kernel = Kernel::new(
                    "maxpool2d",
                    include_str!("../../shaders/maxpool2d.wgsl"),
                    "main",
                );
                let n = planes * ho * wo;
                let groups = gpu.groups_elementwise(n);
                let [values, idx] = launch(gpu, &kernel, &params(&s), &[self], [n, n], groups)?;
                (Storage::Gpu(values), Storage::Gpu(idx))
            }
        };
        let shape = vec![self.shape()[0], self.shape()[1], ho, wo];
        let argmax = Tensor::from_storage(shape.clone(), DType::U32, self.device(), argmax);
        Ok(Tensor::from_op(
            shape,
            DType::F32,
            self.device(),
            y,
            MaxPool2d {
                x: self.clone(),
                argmax,
                k,
                stride,
            },
        ))
    }
}
