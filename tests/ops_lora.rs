//! LoRA's linear layers: x·Wᵀ + b + s·(x·Aᵀ)·Bᵀ against the CPU, finite differences, the
//! unfused layer and PyTorch, and over a GELU taken as each product loads.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, check_op, input, run, uniform};
use webgrad::{Device, Tensor};

/// LoRA's layer over a GELU (GPT-2's MLP projection with an adapter), the GELU taken as each
/// product loads the pre-activation: the values and the gradients of the pre-activation, A,
/// B and the residual equal those through a GELU stored first and the unfused layer, on the
/// GPU and the CPU.
#[test]
fn gelu_lora_linear_equals_the_unfused_layer_over_a_stored_gelu() {
    run(async {
        let shapes = [
            &[2, 5, 12][..],
            &[9, 12],
            &[9],
            &[3, 12],
            &[9, 3],
            &[2, 5, 9],
        ];
        let inputs: Vec<_> = shapes
            .iter()
            .zip(11..)
            .map(|(s, seed)| input(s, seed))
            .collect();
        let gpu = common::gpu().await;
        for device in [Device::Cpu, gpu] {
            for with_residual in [false, true] {
                let leaves = || -> Vec<Tensor> {
                    inputs
                        .iter()
                        .map(|i| {
                            Tensor::from_f64(i.values.clone(), &i.shape, &device)
                                .unwrap()
                                .with_grad()
                        })
                        .collect()
                };
                let (fused_in, unfused_in) = (leaves(), leaves());
                let fused = {
                    let t = &fused_in;
                    let residual = with_residual.then_some(&t[5]);
                    t[0].gelu_lora_linear((&t[1], Some(&t[2])), (&t[3], &t[4]), 0.75, residual)
                        .unwrap()
                };
                let unfused = {
                    let t = &unfused_in;
                    let y = t[0]
                        .gelu()
                        .unwrap()
                        .lora_linear_unfused(&t[1], Some(&t[2]), (&t[3], &t[4]), 0.75)
                        .unwrap();
                    match with_residual {
                        true => y.add(&t[5]).unwrap(),
                        false => y,
                    }
                };
                let what = format!("on {}, residual {with_residual}", device.name());
                let (got, want) = (
                    fused.to_vec_f64().await.unwrap(),
                    unfused.to_vec_f64().await.unwrap(),
                );
                assert_close(&format!("{what}: values"), &got, &want, 1e-5);
                let upstream =
                    Tensor::from_f64(uniform(got.len(), -1.0, 1.0, 5), fused.shape(), &device)
                        .unwrap();
                let loss = |y: &Tensor| y.mul(&upstream).unwrap().sum_all().unwrap();
                let (g_fused, g_unfused) = (
                    loss(&fused).backward().unwrap(),
                    loss(&unfused).backward().unwrap(),
                );
                for (k, name) in [(0, "pre"), (3, "A"), (4, "B"), (5, "residual")] {
                    let (Some(f), Some(u)) =
                        (g_fused.get(&fused_in[k]), g_unfused.get(&unfused_in[k]))
                    else {
                        assert!(!with_residual && k == 5, "{what}: no gradient of {name}");
                        continue;
                    };
                    assert_close(
                        &format!("{what}: the gradient of {name}"),
                        &f.to_vec_f64().await.unwrap(),
                        &u.to_vec_f64().await.unwrap(),
                        1e-4,
                    );
                }
            }
        }
    });
}

/// LoRA's linear layer x·Wᵀ + b + s·(x·Aᵀ)·Bᵀ: GPU against the CPU reference and gradients
/// against finite differences for every input (rows folded from a 3-D input, rank 3), the
/// fused form equal to the unfused one, and PyTorch's values (tests/golden/lora.json, written
/// by tools/lora_golden.py) with the base frozen: y and the gradients of x, A and B.
#[test]
fn lora_linear_matches_cpu_unfused_and_pytorch() {
    use serde_json::Value;
    run(async {
        let shapes = [&[2, 3, 10][..], &[7, 10], &[7], &[3, 10], &[7, 3]];
        let inputs: Vec<_> = shapes
            .iter()
            .zip(1..)
            .map(|(s, seed)| input(s, seed))
            .collect();
        check_op("lora_linear", &inputs, 1e-4, |_, t| {
            t[0].lora_linear(&t[1], Some(&t[2]), (&t[3], &t[4]), 0.75)
        })
        .await;

        let gpu = common::gpu().await;
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/lora.json");
        let golden: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let sizes = &golden["sizes"];
        let size = |k: &str| sizes[k].as_u64().unwrap() as usize;
        let (n, i, o, r) = (size("n"), size("in"), size("out"), size("rank"));
        let scale = (sizes["alpha"].as_f64().unwrap() / r as f64) as f32;
        let values = |k: &str| -> Vec<f32> {
            let v = golden[k].as_array().unwrap();
            v.iter().map(|x| x.as_f64().unwrap() as f32).collect()
        };
        let tensor = |k: &str, shape: &[usize]| Tensor::from_vec(values(k), shape, &gpu).unwrap();
        let x = tensor("x", &[n, i]).with_grad();
        let (w, b) = (tensor("weight", &[o, i]), tensor("bias", &[o]));
        let a = tensor("lora_A", &[r, i]).with_grad();
        let bb = tensor("lora_B", &[o, r]).with_grad();
        let y = x.lora_linear(&w, Some(&b), (&a, &bb), scale).unwrap();
        let unfused = x
            .lora_linear_unfused(&w, Some(&b), (&a, &bb), scale)
            .unwrap();
        let upstream = tensor("upstream", &[n, o]);
        let grads = y
            .mul(&upstream)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let close = |what: &str, got: Vec<f32>, want: Vec<f32>| {
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                    "{what}[{k}]: {g} vs {w}"
                );
            }
        };
        close("y", y.to_vec().await.unwrap(), values("y"));
        close("unfused y", unfused.to_vec().await.unwrap(), values("y"));
        for (name, t) in [("grad_x", &x), ("grad_lora_A", &a), ("grad_lora_B", &bb)] {
            close(
                name,
                grads.get(t).unwrap().to_vec().await.unwrap(),
                values(name),
            );
        }
        assert!(
            grads.get(&w).is_none() && grads.get(&b).is_none(),
            "the base is frozen"
        );
    });
}
