//! 2-D convolution, NCHW, with stride and zero padding.

use super::{gpu_of, launch1, matmul_raw, matmul_row_bias};
use crate::autograd::{no_grad, Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel};
use crate::tensor::{DType, Host, Storage, Tensor};
use std::rc::Rc;

crate::kernel_params! {
    /// shaders/im2col.wgsl and col2im.wgsl: the sizes of `Conv`.
    struct ConvParams {
        n: u32, ci: u32, h: u32, w: u32, co: u32, kh: u32, kw: u32, ho: u32, wo: u32,
        stride: u32, pad: u32,
    }
}

/// Sizes of one convolution.
#[derive(Clone, Copy)]
struct Conv {
    n: usize,
    ci: usize,
    h: usize,
    w: usize,
    co: usize,
    kh: usize,
    kw: usize,
    ho: usize,
    wo: usize,
    stride: usize,
    pad: usize,
}

impl Conv {
    fn params(&self) -> ConvParams {
        let c = self;
        let [n, ci, h, w, co, kh, kw, ho, wo, stride, pad] = [
            c.n, c.ci, c.h, c.w, c.co, c.kh, c.kw, c.ho, c.wo, c.stride, c.pad,
        ]
        .map(|v| v as u32);
        ConvParams {
            n,
            ci,
            h,
            w,
            co,
            kh,
            kw,
            ho,
            wo,
            stride,
            pad,
        }
    }

    /// Calls f(x index, w index, y index) for every multiply-add of the convolution.
    fn for_each_tap(&self, mut f: impl FnMut(usize, usize, usize)) {
        let c = *self;
        for b in 0..c.n {
            for o in 0..c.co {
                for oy in 0..c.ho {
                    for ox in 0..c.wo {
                        let yi = ((b * c.co + o) * c.ho + oy) * c.wo + ox;
                        for ci in 0..c.ci {
                            for ky in 0..c.kh {
                                let iy = (oy * c.stride + ky) as isize - c.pad as isize;
                                if iy < 0 || iy >= c.h as isize {
                                    continue;
                                }
                                for kx in 0..c.kw {
                                    let ix = (ox * c.stride + kx) as isize - c.pad as isize;
                                    if ix < 0 || ix >= c.w as isize {
                                        continue;
                                    }
                                    let xi =
                                        ((b * c.ci + ci) * c.h + iy as usize) * c.w + ix as usize;
                                    f(xi, ((o * c.ci + ci) * c.kh + ky) * c.kw + kx, yi);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn sizes(x: &Tensor, w: &Tensor, stride: usize, pad: usize) -> Result<Conv> {
    let bad = |why: String| Error::Shape {
        op: "conv2d",
        a: x.shape().to_vec(),
        b: w.shape().to_vec(),
        why,
    };
    if x.rank() != 4 || w.rank() != 4 {
        return Err(bad(
            "input must be [N, C, H, W] and weight [out, in, kh, kw]".into(),
        ));
    }
    let (n, ci, h, wd) = (x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3]);
    let (co, wci, kh, kw) = (w.shape()[0], w.shape()[1], w.shape()[2], w.shape()[3]);
    if wci != ci {
        return Err(bad(format!(
            "the weight expects {wci} input channels, the input has {ci}"
        )));
    }
    if stride == 0 {
        return Err(Error::Invalid {
            op: "conv2d",
            why: "stride must be at least 1".into(),
        });
    }
    if h + 2 * pad < kh || wd + 2 * pad < kw {
        return Err(bad("the kernel is larger than the padded input".into()));
    }
    let (ho, wo) = (
        (h + 2 * pad - kh) / stride + 1,
        (wd + 2 * pad - kw) / stride + 1,
    );
    Ok(Conv {
        n,
        ci,
        h,
        w: wd,
        co,
        kh,
        kw,
        ho,
        wo,
        stride,
        pad,
    })
}

/// The columns of `x` for the convolution `c`: [N, C·kh·kw, HO·WO].
fn im2col(gpu: &Rc<Gpu>, x: &Tensor, c: &Conv) -> Result<Tensor> {
    let (taps, positions) = (c.ci * c.kh * c.kw, c.ho * c.wo);
    let len = c.n * taps * positions;
    let kernel = Kernel::new("im2col", include_str!("../../shaders/im2col.wgsl"), "main");
    let col = launch1(
        gpu,
        &kernel,
        &c.params(),
        &[x],
        len,
        gpu.groups_elementwise(len),
    )?;
    Ok(Tensor::from_storage(
        vec![c.n, taps, positions],
        DType::F32,
        x.device(),
        col,
    ))
}

/// A 2-D convolution, as recorded for backward.
struct Conv2dOp {
    x: Tensor,
    weight: Tensor,
    bias: Option<Tensor>,
    stride: usize,
    padding: usize,
    /// Whether the output went through ReLU (Tensor::conv2d_relu).
    relu: bool,
    /// im2col(x) from the forward, on the GPU, where the weight's gradient will need it: the
    /// backward then does not unfold x again (a dispatch; the cnn's unfolds took 34 µs a call
    /// on average at batch 128 on an H200).
    col: Option<Tensor>,
}

impl Backward for Conv2dOp {
    /// Only the inputs that need a gradient: the first layer's images need none, and their
    /// gradient (a product and a col2im) is not computed.
    fn inputs(&self) -> Inputs<'_> {
        [&self.x, &self.weight]
            .into_iter()
            .chain(&self.bias)
            .filter(|t| t.requires_grad())
            .collect()
    }
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let g = &super::unary::grad_through_relu(self.relu, out, g)?;
        self.backward_through_relu(out, g)
    }
    fn stores_through_relu(&self) -> bool {
        self.relu
    }
    fn backward_through_relu(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        let bias_grad = self.bias.as_ref().is_some_and(|b| b.requires_grad());
        conv2d_backward(
            (&self.x, self.col.as_ref()),
            &self.weight,
            bias_grad,
            (self.stride, self.padding),
            g,
        )
    }
}

/// Gradients of the input, the weight and the bias (when `bias_grad`): those needing one, in
/// that order.
fn conv2d_backward(
    (x, col): (&Tensor, Option<&Tensor>),
    w: &Tensor,
    bias_grad: bool,
    (stride, pad): (usize, usize),
    g: &Tensor,
) -> Result<Vec<Tensor>> {
    let c = sizes(x, w, stride, pad)?;
    let name = "conv2d backward";
    let (dx, dw): (Option<Storage>, Tensor) = match gpu_of(x.device()) {
        None => {
            let (xv, wv, gv) = (x.host_f64(name)?, w.host_f64(name)?, g.host_f64(name)?);
            let (mut dx, mut dw) = (vec![0.0; x.numel()], vec![0.0; w.numel()]);
            c.for_each_tap(|xi, wi, yi| {
                dx[xi] += gv[yi] * wv[wi];
                dw[wi] += gv[yi] * xv[xi];
            });
            let dw = Tensor::from_storage(
                w.shape().to_vec(),
                DType::F32,
                x.device(),
                Storage::Host(Host::F(dw)),
            );
            (Some(Storage::Host(Host::F(dx))), dw)
        }
        Some(gpu) => gpu_conv_grads(gpu, (x, col), w, g, &c)?,
    };
    let mut grads = Vec::with_capacity(3);
    if let Some(dx) = dx.filter(|_| x.requires_grad()) {
        grads.push(Tensor::from_storage(
            x.shape().to_vec(),
            DType::F32,
            x.device(),
            dx,
        ));
    }
    if w.requires_grad() {
        grads.push(dw);
    }
    if bias_grad {
        grads.push(g.sum_to_shape(&[1, c.co, 1, 1])?.reshape(&[c.co])?);
    }
    Ok(grads)
}

/// The input's gradient (when it needs one) and the weight's, on the GPU. With col =
/// im2col(x): dW = Σ_n g_n · col_nᵀ and dcol = Wᵀ · g, folded back by col2im.
fn gpu_conv_grads(
    gpu: &Rc<Gpu>,
    (x, col): (&Tensor, Option<&Tensor>),
    w: &Tensor,
    g: &Tensor,
    c: &Conv,
) -> Result<(Option<Storage>, Tensor)> {
    let (taps, positions) = (c.ci * c.kh * c.kw, c.ho * c.wo);
    let col = match col {
        Some(col) => col.clone(),
        None => im2col(gpu, x, c)?,
    };
    let g3 = g.reshape(&[c.n, c.co, positions])?;
    let dw = matmul_raw(&g3, &col, false, true)?.sum(0, false)?;
    let dx = match x.requires_grad() {
        true => {
            let dcol = matmul_raw(&w.reshape(&[c.co, taps])?, &g3, true, false)?;
            let kernel = Kernel::new("col2im", include_str!("../../shaders/col2im.wgsl"), "main");
            let n = x.numel();
            let groups = gpu.groups_elementwise(n);
            Some(launch1(gpu, &kernel, &c.params(), &[&dcol], n, groups)?)
        }
        false => None,
    };
    Ok((dx, dw.reshape(w.shape())?))
}

/// The CPU reference of the convolution, in f64.
fn cpu_conv2d(
    x: &Tensor,
    (weight, bias): (&Tensor, Option<&Tensor>),
    c: &Conv,
    relu: bool,
) -> Result<Tensor> {
    let name = "conv2d";
    let (xv, wv) = (x.host_f64(name)?, weight.host_f64(name)?);
    let b = match bias {
        Some(b) => b.host_f64(name)?,
        None => vec![0.0; c.co],
    };
    let mut y: Vec<f64> = (0..c.n * c.co * c.ho * c.wo)
        .map(|i| b[(i / (c.ho * c.wo)) % c.co])
        .collect();
    c.for_each_tap(|xi, wi, yi| y[yi] += xv[xi] * wv[wi]);
    if relu {
        y.iter_mut().for_each(|v| *v = v.max(0.0));
    }
    Ok(Tensor::from_storage(
        vec![c.n, c.co, c.ho, c.wo],
        DType::F32,
        x.device(),
        Storage::Host(Host::F(y)),
    ))
}

/// The convolution on the GPU as one batched matrix product:
/// y_n = W [out, taps] · im2col(x)_n [taps, positions], the bias of each output channel (a
/// row of y_n) and the ReLU added as the product is stored.
fn gpu_conv2d(
    gpu: &Rc<Gpu>,
    x: &Tensor,
    (weight, bias): (&Tensor, Option<&Tensor>),
    c: &Conv,
    relu: bool,
) -> Result<(Tensor, Tensor)> {
    let col = im2col(gpu, x, c)?;
    let w = weight.reshape(&[c.co, c.ci * c.kh * c.kw])?;
    let y = matmul_row_bias(&w, &col, bias, relu)?.reshape(&[c.n, c.co, c.ho, c.wo])?;
    Ok((y, col))
}

impl Tensor {
    /// 2-D convolution of this [N, C, H, W] input with `weight` [out, C, kh, kw] and an
    /// optional `bias` [out], moving `stride` and padding `padding` zeros on each side.
    pub fn conv2d(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: usize,
    ) -> Result<Tensor> {
        conv2d_of(self, (weight, bias), (stride, padding), false)
    }

    /// `self.conv2d(weight, bias, stride, padding).relu()`, the ReLU applied as the
    /// convolution's product is stored, with no pass of its own.
    pub fn conv2d_relu(
        &self,
        weight: &Tensor,
        bias: Option<&Tensor>,
        stride: usize,
        padding: usize,
    ) -> Result<Tensor> {
        conv2d_of(self, (weight, bias), (stride, padding), true)
    }
}

/// The convolution, through ReLU with `relu`, recorded for backward.
fn conv2d_of(
    x: &Tensor,
    (weight, bias): (&Tensor, Option<&Tensor>),
    (stride, padding): (usize, usize),
    relu: bool,
) -> Result<Tensor> {
    let name = "conv2d";
    x.expect_dtype(name, DType::F32)?;
    weight.expect_dtype(name, DType::F32)?;
    x.same_device(name, weight)?;
    let c = sizes(x, weight, stride, padding)?;
    if let Some(b) = bias {
        x.same_device(name, b)?;
        if b.shape() != [c.co] {
            return Err(Error::Shape {
                op: name,
                a: weight.shape().to_vec(),
                b: b.shape().to_vec(),
                why: "the bias must have one value per output channel".into(),
            });
        }
    }
    let (out, col) = match gpu_of(x.device()) {
        None => (cpu_conv2d(x, (weight, bias), &c, relu)?, None),
        Some(gpu) => no_grad(|| gpu_conv2d(gpu, x, (weight, bias), &c, relu))
            .map(|(y, col)| (y, Some(col)))?,
    };
    // Kept for a weight that takes a gradient; when nothing is recorded `adopt` drops the op,
    // and the columns with it.
    let keep = weight.requires_grad();
    let op = Conv2dOp {
        x: x.clone(),
        weight: weight.clone(),
        bias: bias.cloned(),
        stride,
        padding,
        relu,
        col: col.filter(|_| keep),
    };
    Ok(Tensor::adopt(&out, op))
}
