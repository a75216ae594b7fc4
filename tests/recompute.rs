//! A GPT's blocks run again in backward instead of keeping their activations
//! (`Gpt::set_recompute`): the same loss and gradients as blocks that keep them, with dropout
//! (whose masks must be drawn again alike) and with LoRA (whose frozen weights take none), and
//! less memory held between the forward pass and backward; with the kept inputs in f16
//! (`KeptInputs::Half`, mixed precision's), gradients within f16's rounding and half those bytes.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, indices, run};
use webgrad::nn::{Gpt, GptConfig, Init, KeptInputs, LoraConfig, Model, Module};
use webgrad::{Device, Tensor};

/// One training loss and its gradients: the loss, each parameter's gradient by name, and the
/// bytes the GPU held from before the forward pass until backward.
struct Step {
    loss: Vec<f64>,
    grads: Vec<(String, Vec<f64>)>,
    held: u64,
}

async fn step(config: &GptConfig, recompute: Option<KeptInputs>, gpu: &Device) -> Step {
    let Device::Gpu(context) = gpu else {
        unreachable!("common::gpu gives a GPU")
    };
    let mut gpt = Gpt::new(config, &mut Init::new(3, gpu)).unwrap();
    gpt.set_recompute(recompute);
    let tokens = Tensor::from_u32(indices(64, 29, 1), &[4, 16], gpu).unwrap();
    let targets = Tensor::from_u32(indices(64, 29, 2), &[64], gpu).unwrap();
    let before = context.counters().bytes_live;
    let loss = gpt.loss(&tokens, &targets, Some(7)).unwrap();
    let held = context.counters().bytes_live - before;
    let grads = loss.backward().unwrap();
    let mut by_name = Vec::new();
    for (name, p) in gpt.parameters() {
        if let Some(g) = grads.get(&p) {
            by_name.push((name, g.to_vec_f64().await.unwrap()));
        }
    }
    Step {
        loss: loss.to_vec_f64().await.unwrap(),
        grads: by_name,
        held,
    }
}

#[test]
fn recomputed_blocks_give_the_kept_gradients_and_hold_less() {
    run(async {
        let gpu = common::gpu().await;
        let lora = LoraConfig {
            rank: 4,
            alpha: 8.0,
        };
        for (dropout, lora) in [(0.2, None), (0.0, Some(lora))] {
            let config = GptConfig {
                vocab: 29,
                context: 16,
                layers: 3,
                heads: 2,
                width: 32,
                dropout,
                norm: Default::default(),
                lora,
            };
            let name = format!("dropout {dropout}, LoRA {}", lora.is_some());
            let kept = step(&config, None, &gpu).await;
            let again = step(&config, Some(KeptInputs::Whole), &gpu).await;
            let half = step(&config, Some(KeptInputs::Half), &gpu).await;
            assert_close(&format!("{name}: loss"), &again.loss, &kept.loss, 1e-6);
            // The forward pass runs on the values before rounding: the same loss.
            assert_close(&format!("{name}: loss, half"), &half.loss, &kept.loss, 1e-6);
            let names = |s: &Step| s.grads.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
            assert_eq!(names(&again), names(&kept), "{name}: what has a gradient");
            assert_eq!(
                names(&half),
                names(&kept),
                "{name}: what has a gradient, half"
            );
            let mut rounded = 0.0f64;
            for (((p, got), (_, want)), (_, halved)) in
                again.grads.iter().zip(&kept.grads).zip(&half.grads)
            {
                assert_close(&format!("{name}: gradient of {p}"), got, want, 1e-5);
                assert_close(
                    &format!("{name}: gradient of {p}, half"),
                    halved,
                    want,
                    5e-3,
                );
                let off = halved.iter().zip(want).map(|(h, w)| (h - w).abs());
                rounded = off.fold(rounded, f64::max);
            }
            // Backward ran from rounded inputs, not from the values themselves.
            assert!(rounded > 1e-7, "{name}: half's gradients are f32's exactly");
            assert!(
                again.held * 2 < kept.held,
                "{name}: recomputing held {} bytes until backward, keeping {}",
                again.held,
                kept.held
            );
            // Each block's input is 64 × 32 values, 8,192 bytes in f32 and 4,096 in f16: the
            // first block's is kept half where it needs no gradient (LoRA's frozen embeddings),
            // the last block's output whole (the final norm reads it).
            let halved_inputs = config.layers - 1 + usize::from(lora.is_some());
            assert_eq!(
                again.held - half.held,
                halved_inputs as u64 * 4096,
                "{name}: bytes held until backward, whole {} and half {}",
                again.held,
                half.held
            );
        }
    });
}
