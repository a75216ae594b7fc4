//! Elementwise unary ops, one row of data each: WGSL forward and gradient expressions, and the
//! same two functions on the CPU. Adding an op is adding a row.

use super::vec4_buffers;
use super::{gpu_of, launch1};
use crate::autograd::{Backward, Inputs};
use crate::error::Result;
use crate::gpu::Kernel;
use crate::tensor::{DType, Host, Storage, Tensor};

/// An elementwise unary op; the scalar ones carry their constant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unary {
    Neg,
    Exp,
    Log,
    Sqrt,
    Relu,
    Gelu,
    Tanh,
    Sigmoid,
    Reciprocal,
    Exp2,
    Log2,
    Sin,
    Cos,
    Scale(f32),
    AddScalar(f32),
    Pow(f32),
}

/// One op: its forward and gradient, in WGSL (x, c; x, y, g, c) and on the CPU.
struct Row {
    wgsl: &'static str,
    wgsl_grad: &'static str,
    cpu: fn(f64, f64) -> f64,
    cpu_grad: fn(f64, f64, f64, f64) -> f64,
}

const GELU_K: f64 = 0.797_884_560_802_865_4;

fn gelu(x: f64) -> f64 {
    0.5 * x * (1.0 + (GELU_K * (x + 0.044715 * x * x * x)).tanh())
}

pub(super) fn gelu_grad(x: f64) -> f64 {
    let t = (GELU_K * (x + 0.044715 * x * x * x)).tanh();
    0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K * (1.0 + 3.0 * 0.044715 * x * x)
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl Unary {
    fn row(self) -> Row {
        use Unary::*;
        match self {
            Neg => Row {
                wgsl: "-x",
                wgsl_grad: "-g",
                cpu: |x, _| -x,
                cpu_grad: |_, _, g, _| -g,
            },
            Exp => Row {
                wgsl: "exp(x)",
                wgsl_grad: "g * y",
                cpu: |x, _| x.exp(),
                cpu_grad: |_, y, g, _| g * y,
            },
            Log => Row {
                wgsl: "log(x)",
                wgsl_grad: "g / x",
                cpu: |x, _| x.ln(),
                cpu_grad: |x, _, g, _| g / x,
            },
            Sqrt => Row {
                wgsl: "sqrt(x)",
                wgsl_grad: "g * 0.5 / y",
                cpu: |x, _| x.sqrt(),
                cpu_grad: |_, y, g, _| g * 0.5 / y,
            },
            Relu => Row {
                wgsl: "max(x, 0.0)",
                wgsl_grad: "select(0.0, g, x > 0.0)",
                cpu: |x, _| x.max(0.0),
                cpu_grad: |x, _, g, _| if x > 0.0 { g } else { 0.0 },
            },
            Gelu => Row {
                wgsl: "gelu(x)",
                wgsl_grad: "g * gelu_grad(x)",
                cpu: |x, _| gelu(x),
                cpu_grad: |x, _, g, _| g * gelu_grad(x),
            },
            Tanh => Row {
                wgsl: "tanh_safe(x)",
                wgsl_grad: "g * (1.0 - y * y)",
                cpu: |x, _| x.tanh(),
                cpu_grad: |_, y, g, _| g * (1.0 - y * y),
            },
            Sigmoid => Row {
                wgsl: "sigmoid(x)",
                wgsl_grad: "g * y * (1.0 - y)",
                cpu: |x, _| sigmoid(x),
                cpu_grad: |_, y, g, _| g * y * (1.0 - y),
            },
            Reciprocal => Row {
                wgsl: "1.0 / x",
                wgsl_grad: "-g * y * y",
                cpu: |x, _| 1.0 / x,
                cpu_grad: |_, y, g, _| -g * y * y,
            },
            Exp2 => Row {
                wgsl: "exp2(x)",
                wgsl_grad: "g * y * LN_2",
                cpu: |x, _| x.exp2(),
                cpu_grad: |_, y, g, _| g * y * std::f64::consts::LN_2,
            },
            Log2 => Row {
                wgsl: "log2(x)",
                wgsl_grad: "g / (x * LN_2)",
                cpu: |x, _| x.log2(),
                cpu_grad: |x, _, g, _| g / (x * std::f64::consts::LN_2),
            },
            Sin => Row {
                wgsl: "sin(x)",
                wgsl_grad: "g * cos(x)",
                cpu: |x, _| x.sin(),
                cpu_grad: |x, _, g, _| g * x.cos(),
            },
            Cos => Row {
                wgsl: "cos(x)",
                wgsl_grad: "-g * sin(x)",
                cpu: |x, _| x.cos(),
                cpu_grad: |x, _, g, _| -g * x.sin(),
            },
            Scale(_) => Row {
                wgsl: "x * c",
                wgsl_grad: "g * c",
                cpu: |x, c| x * c,
                cpu_grad: |_, _, g, c| g * c,
            },
            AddScalar(_) => Row {
                wgsl: "x + c",
                wgsl_grad: "g",
                cpu: |x, c| x + c,
                cpu_grad: |_, _, g, _| g,
            },
            Pow(_) => Row {
                wgsl: "pow_real(x, c)",
                wgsl_grad: "g * c * pow_real(x, c - 1.0)",
                cpu: |x, c| x.powf(c),
                cpu_grad: |x, _, g, c| g * c * x.powf(c - 1.0),
            },
        }
    }

    fn scalar(self) -> f32 {
        match self {
            Unary::Scale(c) | Unary::AddScalar(c) | Unary::Pow(c) => c,
            _ => 0.0,
        }
    }
}

crate::kernel_params! {
    /// shaders/unary.wgsl and unary_backward.wgsl: `n` elements (vec4s in unary.wgsl's vec4
    /// form), the op's scalar `c`.
    struct UnaryParams { n: u32, c: f32 }
}

fn unary(x: &Tensor, kind: Unary) -> Result<Tensor> {
    x.expect_dtype("unary op", DType::F32)?;
    let row = kind.row();
    let c = kind.scalar();
    let storage = match gpu_of(x.device()) {
        None => {
            let v = x.host_f64("unary op")?;
            Storage::Host(Host::F(
                v.into_iter().map(|x| (row.cpu)(x, c as f64)).collect(),
            ))
        }
        Some(gpu) => {
            let n = x.numel();
            // Whole vec4s on real GPUs; emulated ones gather each lane's value anyway.
            let fours =
                !gpu.is_cpu_emulated() && n.is_multiple_of(4) && vec4_buffers(&[x], "unary op")?;
            let (elem, apply, elems) = match fours {
                true => ("vec4<f32>", "f4", n / 4),
                false => ("f32", "f", n),
            };
            let kernel = Kernel::new("unary", include_str!("../../shaders/unary.wgsl"), "main")
                .slot("EXPR", row.wgsl)
                .slot("ELEM", elem)
                .slot("APPLY", apply);
            let params = UnaryParams { n: elems as u32, c };
            launch1(
                gpu,
                &kernel,
                &params,
                &[x],
                n,
                gpu.groups_elementwise(elems),
            )?
        }
    };
    Ok(Tensor::from_op(
        x.shape().to_vec(),
        DType::F32,
        x.device(),
        storage,
        UnaryOp { kind, x: x.clone() },
    ))
}

/// A unary op as recorded for backward.
struct UnaryOp {
    kind: Unary,
    x: Tensor,
}

impl Backward for UnaryOp {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.x]
    }
    fn backward(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        Ok(vec![unary_backward(self.kind, &self.x, out, g)?])
    }
    fn stores_through_relu(&self) -> bool {
        matches!(self.kind, Unary::Relu)
    }
    /// ReLU's gradient is `g` where the output is positive: what `g` already is.
    fn backward_through_relu(&self, out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        match self.kind {
            Unary::Relu => Ok(vec![g.clone()]),
            _ => self.backward(out, g),
        }
    }
}

/// The gradient `g` of an op's output `y` taken back through the ReLU the op `applied` as it
/// stored its result (`Tensor::linear_relu`, `Tensor::conv2d_relu`): from the output, which is
/// positive exactly where the ReLU's input was. Without the ReLU, `g` itself.
pub(super) fn grad_through_relu(applied: bool, y: &Tensor, g: &Tensor) -> Result<Tensor> {
    match applied {
        true => unary_backward(Unary::Relu, y, y, g),
        false => Ok(g.clone()),
    }
}

/// dx for a unary op from its input, output and the output's gradient.
fn unary_backward(kind: Unary, x: &Tensor, y: &Tensor, g: &Tensor) -> Result<Tensor> {
    let row = kind.row();
    let c = kind.scalar();
    let storage = match gpu_of(x.device()) {
        None => {
            let (xv, yv, gv) = (
                x.host_f64("backward")?,
                y.host_f64("backward")?,
                g.host_f64("backward")?,
            );
            let dx = (0..xv.len())
                .map(|i| (row.cpu_grad)(xv[i], yv[i], gv[i], c as f64))
                .collect();
            Storage::Host(Host::F(dx))
        }
        Some(gpu) => {
            let kernel = Kernel::new(
                "unary_backward",
                include_str!("../../shaders/unary_backward.wgsl"),
                "main",
            )
            .slot("GRAD", row.wgsl_grad);
            let n = x.numel();
            let params = UnaryParams { n: n as u32, c };
            launch1(
                gpu,
                &kernel,
                &params,
                &[x, y, g],
                n,
                gpu.groups_elementwise(n),
            )?
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
    pub fn neg(&self) -> Result<Tensor> {
        unary(self, Unary::Neg)
    }
    pub fn exp(&self) -> Result<Tensor> {
        unary(self, Unary::Exp)
    }
    pub fn log(&self) -> Result<Tensor> {
        unary(self, Unary::Log)
    }
    pub fn sqrt(&self) -> Result<Tensor> {
        unary(self, Unary::Sqrt)
    }
    pub fn relu(&self) -> Result<Tensor> {
        unary(self, Unary::Relu)
    }
    /// GELU, tanh form.
    pub fn gelu(&self) -> Result<Tensor> {
        unary(self, Unary::Gelu)
    }
    pub fn tanh(&self) -> Result<Tensor> {
        unary(self, Unary::Tanh)
    }
    pub fn sigmoid(&self) -> Result<Tensor> {
        unary(self, Unary::Sigmoid)
    }
    /// 1 / x.
    pub fn reciprocal(&self) -> Result<Tensor> {
        unary(self, Unary::Reciprocal)
    }
    /// 2 to the power x.
    pub fn exp2(&self) -> Result<Tensor> {
        unary(self, Unary::Exp2)
    }
    pub fn log2(&self) -> Result<Tensor> {
        unary(self, Unary::Log2)
    }
    pub fn sin(&self) -> Result<Tensor> {
        unary(self, Unary::Sin)
    }
    pub fn cos(&self) -> Result<Tensor> {
        unary(self, Unary::Cos)
    }
    /// Multiplies every element by `c`.
    pub fn scale(&self, c: f32) -> Result<Tensor> {
        unary(self, Unary::Scale(c))
    }
    /// Adds `c` to every element.
    pub fn add_scalar(&self, c: f32) -> Result<Tensor> {
        unary(self, Unary::AddScalar(c))
    }
    /// Raises every element to the power `c`.
    pub fn powf(&self, c: f32) -> Result<Tensor> {
        unary(self, Unary::Pow(c))
    }
}
