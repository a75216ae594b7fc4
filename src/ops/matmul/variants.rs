//! Every kernel variant the product's planner can emit, built without a device and checked as
//! the pipeline cache checks a pipeline (src/gpu/pipelines.rs, `Kernel::check_without_device`):
//! expanded, validated by naga, and its parameters, bindings and constants against what the
//! launch gives. Shapes, tunings, transposes, causal masks, row sums and every epilogue the
//! kernels combine, so that a variant no test happens to run still cannot fail to compile.

use super::epilogue::{Causal, Epilogue, Store};
use super::layout::{Dims, Views};
use super::plan::tests::{
    ARITHMETIC, ARITHMETIC_32K, EMULATED, GUARANTEED, LARGE, MATRIX, MATRIX_32K, SMALL, UNKNOWN,
};
use super::plan::{plan, Needs};
use super::run::MatmulParams;
use crate::gpu::{assert_in_chromes_dialect, Compiler, Kernel, MatrixUnits, Tuning};
use crate::ops::dropout::DropoutMask;
use crate::tensor::{Device, Tensor};
use std::collections::HashSet;

/// The tunings of the planner's table test (plan.rs): large, small, unmeasured,
/// guaranteed-limits and emulated GPUs, through naga and Tint, and natively f16 on matrix units
/// and on the f16 arithmetic, each with the deep slices' workgroup memory and the shallow ones'.
fn tunings() -> Vec<Tuning> {
    let naga = [LARGE, SMALL, UNKNOWN, GUARANTEED, EMULATED];
    let tint = naga.map(|t| t.with_compiler(Compiler::Tint));
    naga.into_iter()
        .chain(tint)
        .chain([MATRIX, MATRIX_32K, ARITHMETIC, ARITHMETIC_32K])
        .collect()
}

/// The epilogues the kernels combine: no bias, one by column or by row, and no tail, a
/// residual (with and without dropout), GELU's or ReLU's derivative, or ReLU.
fn epilogues(t: &Tensor) -> Vec<Epilogue<'_>> {
    let biases = [
        Epilogue::default(),
        Epilogue {
            bias: Some(t),
            ..Epilogue::default()
        },
        Epilogue {
            row_bias: Some(t),
            ..Epilogue::default()
        },
    ];
    let dropout = DropoutMask { p: 0.1, seed: 1 };
    let tails = [
        Epilogue::default(),
        Epilogue {
            residual: Some(t),
            ..Epilogue::default()
        },
        Epilogue {
            residual: Some(t),
            dropout: Some(dropout),
            ..Epilogue::default()
        },
        Epilogue {
            gelu_grad: Some(t),
            ..Epilogue::default()
        },
        Epilogue {
            relu_grad: Some(t),
            ..Epilogue::default()
        },
        Epilogue {
            relu: true,
            ..Epilogue::default()
        },
    ];
    let mut all = Vec::new();
    for bias in biases {
        for tail in tails {
            all.push(Epilogue {
                bias: bias.bias,
                row_bias: bias.row_bias,
                ..tail
            });
        }
    }
    all
}

/// A matrix-unit variant's slots given to the kernel in Chrome's dialect, which naga cannot read
/// (Chrome compiles it on a GPU with subgroup matrices: the bench's product check): its text
/// expands without template text left, in Chrome's dialect only.
fn expands_in_chromes_dialect(kernel: &Kernel) {
    let chrome = Kernel {
        source: MatrixUnits::SubgroupMatrix.kernel_source(),
        ..kernel.clone()
    };
    let text = chrome
        .wgsl()
        .unwrap_or_else(|e| panic!("{} in Chrome's dialect: {e}", kernel.label()));
    assert_in_chromes_dialect(&text, &kernel.label());
}

#[test]
fn every_product_variant_the_planner_emits_builds_and_fits_its_launch() {
    let t = Tensor::zeros(&[1], &Device::Cpu).unwrap();
    let causals = [
        Causal::No,
        Causal::OutputLower,
        Causal::ALower,
        Causal::AUpper,
    ];
    // (m, k, n, batches): every path, register size, K split and ragged edge.
    let shapes = [
        (20, 9, 5, 1),
        (50, 40, 10, 3),
        (200, 300, 100, 1),
        (128, 784, 64, 1),
        (64, 288, 4096, 1),
        (1024, 1024, 1024, 1),
        (4096, 3072, 768, 1),
        (4096, 4096, 4096, 1),
        (132, 520, 136, 8),
    ];
    let (mut checked, mut seen) = (0, HashSet::new());
    for tuning in tunings() {
        for (m, k, n, batches) in shapes {
            let d = Dims { m, n, k, batches };
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let dense = Views::dense(d, (ta, tb), (0, 0));
                let sums = Views {
                    row_sums: Some(m * n),
                    ..dense
                };
                let views = match ta && !tuning.emulated {
                    true => vec![dense, sums],
                    false => vec![dense],
                };
                for (views, causal, vec4_buffers) in views
                    .iter()
                    .flat_map(|v| causals.iter().map(move |c| (*v, *c)))
                    .flat_map(|(v, c)| [(v, c, true), (v, c, false)])
                {
                    for epilogue in epilogues(&t) {
                        let needs = Needs {
                            a_transposed: ta,
                            causal,
                            epilogue_splittable: epilogue.gelu_grad.is_none()
                                && epilogue.dropout.is_none()
                                && epilogue.row_bias.is_none(),
                            vec4_buffers,
                        };
                        let plan = plan((d, views), needs, &tuning);
                        let in_f16 = plan.in_f16();
                        let kernel = plan.kernel.constant("TA", ta).constant("TB", tb);
                        let epilogue = match plan.split.parts > 1 {
                            true => Epilogue::default(),
                            false => epilogue,
                        };
                        // C in f32, and in f16 where an f16 kernel may store it so.
                        let mut stores = vec![Store::f32(plan.whole_vec4s)];
                        if in_f16 && plan.whole_vec4s && plan.split.parts == 1 {
                            stores.push(Store::Halves);
                        }
                        // A and B, what the epilogue binds, then C.
                        let inputs = 2 + [epilogue.bias, epilogue.row_bias, epilogue.residual]
                            .iter()
                            .chain(&[epilogue.gelu_grad, epilogue.relu_grad])
                            .filter(|x| x.is_some())
                            .count();
                        let mut writable = vec![false; inputs];
                        writable.push(true);
                        // B stored as f32, or as f16 (a frozen weight); the matrix units
                        // read f16 copies (operand_f16.rs).
                        let b_types = match in_f16 {
                            true => vec![None],
                            false => vec![Some("f32"), Some("f16")],
                        };
                        let kernels = stores.iter().flat_map(|&store| {
                            let kernel = epilogue.slots(kernel.clone(), store);
                            b_types.iter().map(move |b_type| match b_type {
                                Some(b_type) => kernel.clone().slot("B_TYPE", *b_type),
                                None => kernel.clone(),
                            })
                        });
                        for kernel in kernels {
                            if !seen.insert(kernel.label()) {
                                continue;
                            }
                            if let Err(e) = kernel.check_without_device::<MatmulParams>(&writable) {
                                panic!("{}: {e}", kernel.label());
                            }
                            if kernel.source == MatrixUnits::Cooperative.kernel_source() {
                                expands_in_chromes_dialect(&kernel);
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} variants");
}
