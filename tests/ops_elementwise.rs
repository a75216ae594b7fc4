//! Unary and broadcasting binary ops: GPU vs CPU forward, gradients vs finite differences.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{check_op, input, run, Input};
use webgrad::Tensor;

fn positive(shape: &[usize], seed: u64) -> Input {
    let n = shape.iter().product();
    Input {
        values: common::uniform(n, 0.2, 2.0, seed),
        shape: shape.to_vec(),
    }
}

#[test]
fn unary_ops_match_cpu_and_finite_differences() {
    run(async {
        let shape = [7, 77];
        type F = fn(&Tensor) -> webgrad::Result<Tensor>;
        let ops: [(&str, F); 11] = [
            ("neg", |x| x.neg()),
            ("exp", |x| x.exp()),
            ("exp2", |x| x.exp2()),
            ("sin", |x| x.sin()),
            ("cos", |x| x.cos()),
            ("relu", |x| x.relu()),
            ("gelu", |x| x.gelu()),
            ("tanh", |x| x.tanh()),
            ("sigmoid", |x| x.sigmoid()),
            ("scale", |x| x.scale(-1.75)),
            ("add_scalar", |x| x.add_scalar(0.5)),
        ];
        for (name, f) in ops {
            check_op(name, &[input(&shape, 1)], 1e-4, |_, t| f(&t[0])).await;
        }
        let ops: [(&str, F); 5] = [
            ("log", |x| x.log()),
            ("log2", |x| x.log2()),
            ("reciprocal", |x| x.reciprocal()),
            ("sqrt", |x| x.sqrt()),
            ("powf", |x| x.powf(2.5)),
        ];
        for (name, f) in ops {
            check_op(name, &[positive(&shape, 2)], 1e-4, |_, t| f(&t[0])).await;
        }
        // Integer powers of negative bases are real.
        check_op("powf negative base", &[input(&shape, 3)], 1e-4, |_, t| {
            t[0].powf(3.0)
        })
        .await;
    });
}

#[test]
fn gelu_and_tanh_stay_finite_for_large_inputs() {
    run(async {
        let gpu = common::gpu().await;
        let x = Tensor::from_vec(vec![-100.0, -30.0, 0.0, 30.0, 100.0], &[5], &gpu).unwrap();
        let t = x.tanh().unwrap().to_vec().await.unwrap();
        assert_eq!(t, vec![-1.0, -1.0, 0.0, 1.0, 1.0]);
        let g = x.gelu().unwrap().to_vec().await.unwrap();
        assert!(g.iter().all(|v| v.is_finite()), "{g:?}");
        assert_eq!(g[4], 100.0);
    });
}

#[test]
fn binary_ops_broadcast_and_reduce_gradients() {
    run(async {
        type F = fn(&Tensor, &Tensor) -> webgrad::Result<Tensor>;
        let ops: [(&str, F); 4] = [
            ("add", |a, b| a.add(b)),
            ("sub", |a, b| a.sub(b)),
            ("mul", |a, b| a.mul(b)),
            ("maximum", |a, b| a.maximum(b)),
        ];
        let cases: [(&[usize], &[usize]); 4] = [
            (&[9, 41], &[9, 41]),
            (&[5, 1, 33], &[7, 33]),
            (&[7, 33], &[33]),
            (&[1], &[3, 101]),
        ];
        for (name, f) in ops {
            for (i, (sa, sb)) in cases.iter().enumerate() {
                check_op(
                    &format!("{name} case {i}"),
                    &[input(sa, 10 + i as u64), input(sb, 20 + i as u64)],
                    1e-4,
                    |_, t| f(&t[0], &t[1]),
                )
                .await;
            }
        }
        for (i, (sa, sb)) in cases.iter().enumerate() {
            check_op(
                &format!("div case {i}"),
                &[input(sa, 30), positive(sb, 31)],
                1e-4,
                |_, t| t[0].div(&t[1]),
            )
            .await;
        }
    });
}

#[test]
fn incompatible_broadcast_is_a_shape_error() {
    run(async {
        let gpu = common::gpu().await;
        let a = Tensor::zeros(&[3, 4], &gpu).unwrap();
        let b = Tensor::zeros(&[5], &gpu).unwrap();
        let err = a.add(&b).unwrap_err();
        assert!(matches!(err, webgrad::Error::Shape { .. }), "{err}");
    });
}
