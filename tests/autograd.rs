//! The autograd engine and the performance rules: summed gradients, no-grad, one submit and no
//! new buffers per step after warm-up, an early first submit after a wait, and the typed
//! errors of misuse.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{indices, run, uniform};
use webgrad::{no_grad, Device, Error, Tensor};

#[test]
fn a_tensor_used_twice_gets_the_sum_of_its_gradients() {
    run(async {
        for device in [Device::Cpu, common::gpu().await] {
            let xs = vec![-1.5f32, 0.0, 2.0, 3.25];
            let x = Tensor::from_vec(xs.clone(), &[4], &device)
                .unwrap()
                .with_grad();
            let loss = x.mul(&x).unwrap().add(&x).unwrap().sum_all().unwrap();
            let grads = loss.backward().unwrap();
            let g = grads.get(&x).unwrap().to_vec().await.unwrap();
            let want: Vec<f32> = xs.iter().map(|v| 2.0 * v + 1.0).collect();
            assert_eq!(g, want, "on {}", device.name());
        }
    });
}

/// A product with a frozen weight (LoRA's base, a layer not being fine-tuned) gives the input
/// the same gradient as with a trained one, gives the weight and its bias none, and skips
/// their products: two dispatches fewer (the weight's product and the bias's column sum).
#[test]
fn a_frozen_weight_gets_no_gradient_and_costs_no_product() {
    run(async {
        let gpu = common::gpu().await;
        let Device::Gpu(g) = &gpu else {
            unreachable!("common::gpu gives a GPU")
        };
        let make = |shape: &[usize], seed| {
            let n = shape.iter().product();
            let v = uniform(n, -1.0, 1.0, seed)
                .iter()
                .map(|&v| v as f32)
                .collect();
            Tensor::from_vec(v, shape, &gpu).unwrap()
        };
        let x = make(&[5, 7], 1).with_grad();
        let (w, b) = (make(&[3, 7], 2), make(&[3], 3));
        let mut input_grads = Vec::new();
        let mut dispatches = Vec::new();
        for trained in [true, false] {
            let (w, b) = match trained {
                true => (w.detach().with_grad(), b.detach().with_grad()),
                false => (w.detach(), b.detach()),
            };
            let y = x.linear(&w, Some(&b)).unwrap();
            let loss = y.mul(&y).unwrap().sum_all().unwrap();
            let mark = g.counters();
            let grads = loss.backward().unwrap();
            g.finished().await.unwrap();
            dispatches.push(g.counters().since(&mark).dispatches);
            assert_eq!(
                grads.get(&w).is_some(),
                trained,
                "weight trained: {trained}"
            );
            assert_eq!(grads.get(&b).is_some(), trained, "bias trained: {trained}");
            input_grads.push(grads.get(&x).unwrap().to_vec().await.unwrap());
        }
        assert_eq!(input_grads[0], input_grads[1]);
        assert_eq!(
            dispatches[0],
            dispatches[1] + 2,
            "dispatches {dispatches:?}"
        );
    });
}

#[test]
fn a_diamond_graph_sums_each_path_once() {
    run(async {
        let gpu = common::gpu().await;
        let x = Tensor::from_vec(vec![0.5, -2.0], &[2], &gpu)
            .unwrap()
            .with_grad();
        let y = x.scale(3.0).unwrap();
        // loss = Σ y·y + y·x + exp(y) = Σ 9x² + 3x² + e^{3x}; dloss/dx = 24x + 3e^{3x}
        let loss = y
            .mul(&y)
            .unwrap()
            .add(&y.mul(&x).unwrap())
            .unwrap()
            .add(&y.exp().unwrap())
            .unwrap()
            .sum_all()
            .unwrap();
        let g = loss
            .backward()
            .unwrap()
            .get(&x)
            .unwrap()
            .to_vec()
            .await
            .unwrap();
        for (gv, xv) in g.iter().zip([0.5f32, -2.0]) {
            let want = 24.0 * xv + 3.0 * (3.0 * xv).exp();
            assert!(
                (gv - want).abs() < 1e-4 * want.abs().max(1.0),
                "{gv} vs {want}"
            );
        }
    });
}

#[test]
fn no_grad_records_nothing() {
    run(async {
        let gpu = common::gpu().await;
        let x = Tensor::from_vec(vec![1.0, 2.0], &[2], &gpu)
            .unwrap()
            .with_grad();
        let y = no_grad(|| x.mul(&x).unwrap().sum_all().unwrap());
        assert!(!y.requires_grad());
        assert!(matches!(y.backward(), Err(Error::Backward(_))));
        // Recording resumes afterwards, and a detached tensor stops gradients.
        let z = x.mul(&x.detach()).unwrap().sum_all().unwrap();
        assert_eq!(
            z.backward()
                .unwrap()
                .get(&x)
                .unwrap()
                .to_vec()
                .await
                .unwrap(),
            vec![1.0, 2.0]
        );
    });
}

/// One MLP training step (forward, backward, SGD update) on fresh data; returns new params.
fn mlp_step(device: &Device, params: &[Tensor], step: u64) -> Vec<Tensor> {
    let (batch, inputs, classes) = (64, 20, 10);
    let x = Tensor::from_f64(
        uniform(batch * inputs, -1.0, 1.0, step),
        &[batch, inputs],
        device,
    )
    .unwrap();
    let y = Tensor::from_u32(indices(batch, classes as u32, step), &[batch], device).unwrap();
    let h = x
        .matmul(&params[0])
        .unwrap()
        .add(&params[1])
        .unwrap()
        .relu()
        .unwrap();
    let logits = h.matmul(&params[2]).unwrap().add(&params[3]).unwrap();
    let loss = logits.cross_entropy(&y).unwrap();
    let grads = loss.backward().unwrap();
    no_grad(|| {
        params
            .iter()
            .map(|p| {
                p.sub(&grads.get(p).unwrap().scale(0.1).unwrap())
                    .unwrap()
                    .with_grad()
            })
            .collect()
    })
}

#[test]
fn after_warm_up_a_training_step_creates_no_buffer_and_submits_once() {
    run(async {
        let device = common::gpu().await;
        let Device::Gpu(gpu) = &device else {
            unreachable!()
        };
        let shapes: [&[usize]; 4] = [&[20, 48], &[48], &[48, 10], &[10]];
        let mut params: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                Tensor::from_f64(uniform(s.iter().product(), -0.3, 0.3, i as u64), s, &device)
                    .unwrap()
                    .with_grad()
            })
            .collect();
        // The pool hands out its lowest free ids first, so the buffers (and bind groups) of
        // a step settle within a few steps even though each step makes new parameters.
        for step in 0..4 {
            params = mlp_step(&device, &params, step);
            gpu.flush();
        }
        let mark = gpu.counters();
        params = mlp_step(&device, &params, 4);
        gpu.flush();
        let step = gpu.counters().since(&mark);
        println!("one MLP step after warm-up: {step:?}");
        assert_eq!(step.buffers_created, 0, "{step:?}");
        assert_eq!(step.bind_groups_created, 0, "{step:?}");
        assert_eq!(step.submits, 1, "{step:?}");
        assert!(step.dispatches > 10, "{step:?}");
        // The step really trained: the parameters are finite and were updated.
        assert!(params[0]
            .to_vec()
            .await
            .unwrap()
            .iter()
            .all(|v| v.is_finite()));
    });
}

/// After a wait the GPU has nothing to do, so when the stretch before the wait was long (more
/// than the 96 dispatches a submit usually takes), the next dispatches are sent as soon as
/// there are 16; natively, after a short stretch, a short step stays one submit.
#[test]
fn after_a_wait_that_ends_a_long_stretch_the_first_dispatches_are_submitted_at_once() {
    run(async {
        let device = common::gpu().await;
        common::submits::submits_after_a_wait(&device, &[(120, 2), (40, 1)]).await;
    });
}

/// A training step that ends short is left for the next ones to join (`Gpu::step_recorded`):
/// steps of 25 dispatches go three to a submit, and once they have run so, another three create
/// no buffer and no bind group and compute what they should; a step of 70 is submitted at its
/// end.
#[test]
fn short_steps_share_a_submit_and_long_ones_do_not() {
    run(async {
        let device = common::gpu().await;
        let Device::Gpu(gpu) = &device else {
            unreachable!()
        };
        let x = Tensor::from_vec(vec![0.5f32; 64], &[64], &device).unwrap();
        let step = |n: usize| {
            let mut y = x.clone();
            for _ in 0..n {
                y = y.scale(1.01).unwrap();
            }
            gpu.step_recorded();
            y
        };
        for round in 0..2 {
            // A short stretch before the wait: no early first submit after it.
            drop(step(1));
            gpu.finished().await.unwrap();
            let mark = gpu.counters();
            drop(step(25));
            drop(step(25));
            let two = gpu.counters().since(&mark);
            let y = step(25);
            let three = gpu.counters().since(&mark);
            assert_eq!(
                (two.dispatches, two.submits),
                (50, 0),
                "round {round}: {two:?}"
            );
            assert_eq!(
                (three.dispatches, three.submits),
                (75, 1),
                "round {round}: {three:?}"
            );
            if round == 1 {
                let made = (three.buffers_created, three.bind_groups_created);
                assert_eq!(made, (0, 0), "{three:?}");
            }
            let want = 0.5 * 1.01f64.powi(25);
            for v in y.to_vec().await.unwrap() {
                assert!(
                    (v as f64 - want).abs() < 1e-5,
                    "round {round}: {v} vs {want}"
                );
            }
        }
        let mark = gpu.counters();
        drop(step(70));
        assert_eq!(gpu.counters().since(&mark).submits, 1);
    });
}

/// A cached bind group keeps its slot of the parameter arena, and the arena what was uploaded
/// to it: a launch whose slot holds its parameters already uploads none, one whose slot holds
/// others (the same kernel on the same buffers with another factor) uploads its own.
#[test]
fn a_launch_uploads_its_parameters_only_where_its_slot_holds_others() {
    run(async {
        let device = common::gpu().await;
        let Device::Gpu(gpu) = &device else {
            unreachable!()
        };
        let n = 300;
        let x = Tensor::from_f64(uniform(n, -1.0, 1.0, 7), &[n], &device).unwrap();
        let values = x.to_vec().await.unwrap();
        let factors = [2.0, 2.0, 2.0, 3.0, 3.0, -0.5, 2.0];
        for (step, &factor) in factors.iter().enumerate() {
            let mark = gpu.counters();
            // Each step's output takes the buffer the last one gave back: the same group.
            let got = x.scale(factor).unwrap().to_vec().await.unwrap();
            let c = gpu.counters().since(&mark);
            for (g, v) in got.iter().zip(&values) {
                assert!(
                    (g - factor * v).abs() < 1e-6,
                    "step {step}: {g} vs {factor} · {v}"
                );
            }
            if step > 0 {
                let changed = factor != factors[step - 1];
                assert_eq!(c.bind_groups_created, 0, "step {step}: {c:?}");
                assert_eq!(c.param_bytes > 0, changed, "step {step}: {c:?}");
            }
        }
    });
}

/// One kernel launched over the same buffers several times in one submit: each launch reads
/// its own parameters (tests/common/launches.rs).
#[test]
fn launches_over_the_same_buffers_in_one_submit_read_their_own_parameters() {
    run(async {
        let device = common::gpu().await;
        common::launches::launches_over_the_same_buffers_read_their_own_parameters(&device).await;
    });
}

#[test]
fn a_tensor_over_the_binding_limit_is_refused_before_allocating() {
    run(async {
        let device = common::gpu().await;
        let Device::Gpu(gpu) = &device else {
            unreachable!()
        };
        let max = gpu.limits().max_storage_buffer_binding_size;
        let side = ((max / 4) as f64).sqrt() as usize + 16;
        let a = Tensor::zeros(&[side, 1], &device).unwrap();
        let b = Tensor::zeros(&[1, side], &device).unwrap();
        let created = gpu.counters().buffers_created;
        let err = a.add(&b).unwrap_err();
        match &err {
            Error::TooLarge {
                limit,
                requested,
                max: m,
            } => {
                assert_eq!(*limit, "maxStorageBufferBindingSize");
                assert_eq!(*requested, (side * side * 4) as u64);
                assert_eq!(*m, max);
            }
            other => panic!("expected TooLarge, got {other}"),
        }
        assert!(err.to_string().contains("maxStorageBufferBindingSize"));
        assert_eq!(gpu.counters().buffers_created, created);
    });
}

#[test]
fn misuse_gives_typed_errors() {
    run(async {
        let gpu = common::gpu().await;
        let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3], &gpu).unwrap();
        // Reading a freed tensor.
        let y = x.exp().unwrap();
        y.free();
        assert_eq!(y.to_vec().await.unwrap_err(), Error::Freed("read"));
        assert!(matches!(y.add(&x), Err(Error::Freed(_))));
        // Wrong length, wrong dtype, mixed devices, non-scalar backward, bad axis.
        assert!(matches!(
            Tensor::from_vec(vec![1.0; 5], &[2, 3], &gpu),
            Err(Error::Invalid { .. })
        ));
        let idx = Tensor::from_u32(vec![0, 1, 2], &[3], &gpu).unwrap();
        assert!(matches!(x.add(&idx), Err(Error::DType { .. })));
        let cpu = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3], &Device::Cpu).unwrap();
        assert!(matches!(x.add(&cpu), Err(Error::DeviceMismatch(_))));
        assert!(matches!(
            x.with_grad().exp().unwrap().backward(),
            Err(Error::Backward(_))
        ));
        assert!(matches!(x.sum(3, false), Err(Error::Invalid { .. })));
        assert!(matches!(x.permute(&[0, 0]), Err(Error::Invalid { .. })));
        // Empty rows are refused, not divided by.
        let empty = Tensor::zeros(&[2, 0], &Device::Cpu).unwrap();
        assert!(matches!(empty.softmax(), Err(Error::Invalid { .. })));
        let none = Tensor::zeros(&[0], &Device::Cpu).unwrap();
        assert!(matches!(
            empty.layernorm(&none, &none, 1e-5),
            Err(Error::Invalid { .. })
        ));
        // Bad targets: an error on the CPU, NaN (never a panic) on the GPU.
        let logits = Tensor::zeros(&[2, 3], &Device::Cpu).unwrap();
        let bad = Tensor::from_u32(vec![0, 3], &[2], &Device::Cpu).unwrap();
        assert!(matches!(
            logits.cross_entropy(&bad),
            Err(Error::Invalid { .. })
        ));
        let logits = Tensor::zeros(&[2, 3], &gpu).unwrap();
        let bad = Tensor::from_u32(vec![0, 3], &[2], &gpu).unwrap();
        assert!(logits.cross_entropy(&bad).unwrap().to_vec().await.unwrap()[0].is_nan());
    });
}

/// Backward lets go of what each op saved once it has passed the gradient on: a loss still
/// held afterwards keeps none of its graph's intermediates (recomputed GPT-2 blocks held every
/// activation of a block until its last gradient), and a second backward through the same
/// graph is refused with the reason instead of giving gradients that stop where it was cut.
#[test]
fn backward_releases_the_graph_it_passed_through() {
    run(async {
        let device = common::gpu().await;
        let Device::Gpu(gpu) = &device else {
            unreachable!("common::gpu gives a GPU")
        };
        let n = 1 << 16;
        let x = Tensor::from_vec(vec![0.5; n], &[256, 256], &device)
            .unwrap()
            .with_grad();
        let before = gpu.counters().bytes_live;
        let loss = x
            .exp()
            .and_then(|e| e.mul(&x))
            .and_then(|m| m.gelu())
            .and_then(|g| g.sum_all())
            .unwrap();
        // exp, the product and the GELU saved for backward: three tensors of x's size.
        let graph = gpu.counters().bytes_live - before;
        assert!(graph >= 3 * 4 * n as u64, "{graph} bytes held by the graph");
        let grads = loss.backward().unwrap();
        let held = gpu.counters().bytes_live - before;
        let gradient = 4 * n as u64;
        assert!(
            held <= gradient + 4096,
            "after backward {held} bytes are held beside x's gradient of {gradient}"
        );
        let g = grads.get(&x).unwrap().to_vec().await.unwrap();
        assert!(g.iter().all(|v| v.is_finite() && *v > 0.0));
        assert!(
            loss.to_vec().await.unwrap()[0].is_finite(),
            "the loss still reads"
        );
        let again = loss
            .backward()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(again.contains("backward already ran"), "{again}");
    });
}
