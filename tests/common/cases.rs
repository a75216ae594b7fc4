//! The op cases both test runners check: natively (tests/op_cases.rs, lavapipe) and in the
//! browser (tests/browser.rs, SwiftShader), so the two never drift apart. Each case is an op
//! over seeded inputs, run by `check_op`: GPU against the f64 CPU reference on both kernel
//! sets, gradients against the CPU's and the CPU's against finite differences. Shapes are
//! ragged on purpose (not multiples of a workgroup or a tile).

use super::{indices, input, Input};
use webgrad::{Device, Result, Tensor};

/// An op over its inputs, given the device its index tensors go to.
pub type OpFn = Box<dyn Fn(&Device, &[Tensor]) -> Result<Tensor>>;

pub struct OpCase {
    pub name: String,
    pub inputs: Vec<Input>,
    pub tol: f64,
    pub op: OpFn,
}

fn case(name: &str, inputs: Vec<Input>, tol: f64, op: OpFn) -> OpCase {
    OpCase {
        name: name.into(),
        inputs,
        tol,
        op,
    }
}

/// The layers: matmul both ways, cross-entropy, LayerNorm, attention, conv2d with pooling.
pub fn layers() -> Vec<OpCase> {
    let mut cases = Vec::new();
    for (ta, tb) in [(false, false), (true, true)] {
        let a = if ta { [2, 29, 37] } else { [2, 37, 29] };
        let b = if tb { [2, 41, 29] } else { [2, 29, 41] };
        let name = format!("matmul ta={ta} tb={tb}");
        let op: OpFn = Box::new(move |_, t| t[0].matmul_t(&t[1], ta, tb));
        cases.push(case(&name, vec![input(&a, 1), input(&b, 2)], 1e-4, op));
    }
    let targets = indices(37, 11, 5);
    cases.push(case(
        "cross_entropy",
        vec![input(&[37, 11], 1)],
        1e-4,
        Box::new(move |d, t| t[0].cross_entropy(&Tensor::from_u32(targets.clone(), &[37], d)?)),
    ));
    let ins = vec![input(&[13, 70], 1), input(&[70], 2), input(&[70], 3)];
    cases.push(case(
        "layernorm",
        ins,
        1e-4,
        Box::new(|_, t| t[0].layernorm(&t[1], &t[2], 1e-5)),
    ));
    let (x, w, b) = (input(&[2, 9, 12], 1), input(&[7, 12], 2), input(&[7], 3));
    let ins = vec![x, w, b, input(&[2, 9, 7], 4)];
    cases.push(case(
        "gelu_linear_residual",
        ins,
        1e-4,
        Box::new(|_, t| t[0].gelu_linear_residual(&t[1], Some(&t[2]), &t[3])),
    ));
    let ins = vec![input(&[13, 70], 4), input(&[70], 5), input(&[70], 6)];
    cases.push(case(
        "x + layernorm(x)",
        ins,
        1e-4,
        Box::new(|_, t| t[0].add(&t[0].layernorm(&t[1], &t[2], 1e-5)?)),
    ));
    cases.push(case(
        "rmsnorm",
        vec![input(&[5, 70], 11), input(&[70], 12)],
        1e-4,
        Box::new(|_, t| t[0].rmsnorm(&t[1], 1e-5)),
    ));
    let ins = (1..=3).map(|s| input(&[2, 37, 24], s)).collect();
    cases.push(case(
        "attention",
        ins,
        1e-4,
        Box::new(|_, x| x[0].attention(&x[1], &x[2], 3)),
    ));
    let ins = vec![
        input(&[2, 3, 9, 11], 1),
        input(&[5, 3, 3, 3], 2),
        input(&[5], 3),
    ];
    cases.push(case(
        "conv2d + maxpool2d",
        ins.clone(),
        1e-4,
        Box::new(|_, t| t[0].conv2d(&t[1], Some(&t[2]), 1, 1)?.maxpool2d(2, 2)),
    ));
    // The bias of each channel and the ReLU in the product's store.
    cases.push(case(
        "conv2d + relu",
        ins.clone(),
        1e-4,
        Box::new(|_, t| t[0].conv2d_relu(&t[1], Some(&t[2]), 1, 1)),
    ));
    // The pooling's pass takes the gradient through the ReLU (the ReLU's pass skipped).
    cases.push(case(
        "conv2d + relu + maxpool2d",
        ins,
        1e-4,
        Box::new(|_, t| t[0].conv2d_relu(&t[1], Some(&t[2]), 1, 1)?.maxpool2d(2, 2)),
    ));
    cases
}

/// The kernels for real GPUs that the shapes of `layers` do not reach: bias and residual in
/// the matmul's store, packed attention, sums of wide columns, long index lists.
pub fn fast_paths() -> Vec<OpCase> {
    let linear = vec![input(&[2, 20, 12], 3), input(&[9, 12], 4), input(&[9], 5)];
    let mut residual = linear.clone();
    residual.push(input(&[2, 20, 9], 7));
    let idx = indices(701, 11, 8);
    let wide = indices(300, 3, 12);
    vec![
        case(
            "linear",
            linear,
            1e-4,
            Box::new(|_, t| t[0].linear(&t[1], Some(&t[2]))),
        ),
        case(
            "linear + residual",
            residual,
            1e-4,
            Box::new(|_, t| t[0].linear_residual(&t[1], Some(&t[2]), &t[3])),
        ),
        // A linear layer of few output tiles over a long K: K split into chunks, their partial
        // products summed with the bias.
        case(
            "linear, K split",
            vec![
                input(&[10, 300], 13),
                input(&[70, 300], 14),
                input(&[70], 15),
            ],
            1e-4,
            Box::new(|_, t| t[0].linear(&t[1], Some(&t[2]))),
        ),
        // The ReLU in the product's store, and in the pass that sums K's chunks.
        case(
            "linear + relu",
            vec![
                input(&[2, 20, 12], 16),
                input(&[9, 12], 17),
                input(&[9], 18),
            ],
            1e-4,
            Box::new(|_, t| t[0].linear_relu(&t[1], Some(&t[2]))),
        ),
        case(
            "linear + relu, K split",
            vec![
                input(&[10, 300], 19),
                input(&[70, 300], 20),
                input(&[70], 21),
            ],
            1e-4,
            Box::new(|_, t| t[0].linear_relu(&t[1], Some(&t[2]))),
        ),
        // The next layer's product passes the gradient back through the ReLU as it stores
        // it, and in the pass that sums K's chunks (the ReLU's pass skipped).
        case(
            "linear + relu + linear",
            vec![
                input(&[2, 20, 12], 40),
                input(&[9, 12], 41),
                input(&[9], 42),
                input(&[7, 9], 43),
                input(&[7], 44),
            ],
            1e-4,
            Box::new(|_, t| {
                t[0].linear_relu(&t[1], Some(&t[2]))?
                    .linear(&t[3], Some(&t[4]))
            }),
        ),
        case(
            "linear + relu + linear, K split",
            vec![
                input(&[10, 300], 45),
                input(&[70, 300], 46),
                input(&[70], 47),
                input(&[300, 70], 48),
                input(&[300], 49),
            ],
            1e-4,
            Box::new(|_, t| {
                t[0].linear_relu(&t[1], Some(&t[2]))?
                    .linear(&t[3], Some(&t[4]))
            }),
        ),
        // The dropout before the residual in the product's store, and after a GELU.
        case(
            "linear + dropout + residual",
            vec![
                input(&[2, 20, 12], 22),
                input(&[9, 12], 23),
                input(&[9], 24),
                input(&[2, 20, 9], 25),
            ],
            1e-4,
            Box::new(|_, t| t[0].linear_residual_dropout((&t[1], Some(&t[2])), &t[3], 0.3, 7)),
        ),
        case(
            "gelu + linear + dropout + residual",
            vec![
                input(&[2, 20, 12], 26),
                input(&[9, 12], 27),
                input(&[9], 28),
                input(&[2, 20, 9], 29),
            ],
            1e-4,
            Box::new(|_, t| t[0].gelu_linear_residual_dropout((&t[1], Some(&t[2])), &t[3], 0.3, 7)),
        ),
        // Packed q, k and v (two heads of 16), read in place by the tiled attention kernels:
        // two blocks of 64 query rows, the second ragged.
        case(
            "packed attention",
            vec![input(&[1, 70, 96], 6)],
            1e-4,
            Box::new(|_, x| x[0].attention_packed(2)),
        ),
        case(
            "sum of wide columns",
            vec![input(&[3, 130, 65], 7)],
            1e-4,
            Box::new(|_, t| t[0].sum(1, false)),
        ),
        // Long enough to be cut into pieces on real GPUs, with elements left over.
        case(
            "sum of long rows",
            vec![input(&[2, 70001], 10)],
            1e-4,
            Box::new(|_, t| t[0].sum(1, false)),
        ),
        case(
            "embedding of many",
            vec![input(&[11, 6], 9)],
            1e-4,
            Box::new(move |d, t| t[0].embedding(&Tensor::from_u32(idx.clone(), &[701], d)?)),
        ),
        // Rows wider than a workgroup's 1,024 columns a pass, and indices over two tiles.
        case(
            "embedding of wide rows",
            vec![input(&[3, 1100], 11)],
            1e-4,
            Box::new(move |d, t| t[0].embedding(&Tensor::from_u32(wide.clone(), &[300], d)?)),
        ),
    ]
}

/// Every other kernel: the unary ops and row ops on one [7, 45] input, broadcasting binary
/// ops, the movement ops and a short embedding.
pub fn others() -> Vec<OpCase> {
    type F = fn(&Tensor) -> Result<Tensor>;
    let unary: [(&str, F); 19] = [
        ("neg", |t| t.neg()),
        ("exp", |t| t.exp()),
        ("relu", |t| t.relu()),
        ("gelu", |t| t.gelu()),
        ("tanh", |t| t.tanh()),
        ("sigmoid", |t| t.sigmoid()),
        ("scale, add_scalar, log", |t| {
            t.scale(0.5)?.add_scalar(2.0)?.log()
        }),
        ("sqrt", |t| t.add_scalar(2.0)?.sqrt()),
        ("powf", |t| t.powf(3.0)),
        ("sin, cos, exp2", |t| t.sin()?.add(&t.cos()?)?.exp2()),
        ("reciprocal", |t| t.add_scalar(2.0)?.reciprocal()),
        ("log2", |t| t.add_scalar(2.0)?.log2()),
        ("strided slice", |t| t.slice_step(1, 2, 10, 4)),
        ("pad", |t| t.pad(0, (2, 1), -1.5)?.pad(1, (0, 3), 0.0)),
        ("softmax", |t| t.softmax()),
        ("log_softmax", |t| t.log_softmax()),
        ("max", |t| t.max(0, false)),
        ("mean", |t| t.mean(1, true)),
        ("dropout", |t| t.dropout(0.2, 3)),
    ];
    let mut cases: Vec<OpCase> = unary
        .into_iter()
        .map(|(name, f)| {
            case(
                name,
                vec![input(&[7, 45], 1)],
                1e-4,
                Box::new(move |_, t| f(&t[0])),
            )
        })
        .collect();
    cases.push(case(
        "broadcast sub/div/maximum",
        vec![input(&[7, 45], 1), input(&[45], 2)],
        1e-4,
        Box::new(|_, t| {
            t[0].sub(&t[1])?
                .div(&t[1].scale(0.1)?.add_scalar(2.0)?)?
                .maximum(&t[1])
        }),
    ));
    cases.push(case(
        "permute, slice, concat, expand",
        vec![input(&[3, 5, 7], 3)],
        1e-5,
        Box::new(|_, t| {
            let p = t[0].permute(&[2, 0, 1])?.slice(0, 1, 4)?;
            Tensor::concat(&[p.clone(), p.expand(&[4, 3, 5])?], 1)
        }),
    ));
    let idx = indices(30, 11, 4);
    cases.push(case(
        "embedding",
        vec![input(&[11, 9], 5)],
        1e-5,
        Box::new(move |d, t| t[0].embedding(&Tensor::from_u32(idx.clone(), &[30], d)?)),
    ));
    cases.push(case(
        "lora_linear",
        vec![
            input(&[2, 3, 10], 6),
            input(&[7, 10], 7),
            input(&[7], 8),
            input(&[3, 10], 9),
            input(&[7, 3], 10),
        ],
        1e-4,
        Box::new(|_, t| t[0].lora_linear(&t[1], Some(&t[2]), (&t[3], &t[4]), 0.75)),
    ));
    cases
}

/// Runs every case of a table through `check_op`.
pub async fn check_all(cases: Vec<OpCase>) {
    for c in cases {
        super::check_op(&c.name, &c.inputs, c.tol, &*c.op).await;
    }
}
