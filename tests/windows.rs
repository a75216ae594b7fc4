//! A table larger than one storage binding (lavapipe binds 128 MiB; GPT-2's token embedding is
//! 154 MB): 600,000 rows of 64 floats (154 MB too), bound a window of rows at a time by the
//! embedding's gather and by the output layer's products and loss, against the CPU; a kernel
//! that would bind it whole is refused by name. And a frozen table that binds whole, kept padded
//! for the loss with the embedding a view of it.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::{assert_close, indices, run, uniform};
use webgrad::{Device, Tensor};

const ROWS: usize = 600_000;
const WIDTH: usize = 64;

/// The test GPU, which must bind less than a table of `bytes` for it to go in windows.
async fn gpu_binding_less_than(bytes: usize) -> Device {
    let gpu = common::gpu().await;
    let Device::Gpu(context) = &gpu else {
        unreachable!("common::gpu gives a GPU")
    };
    let binding = context.limits().max_storage_buffer_binding_size;
    assert!(
        bytes as u64 > binding,
        "this test needs a GPU that binds less than {bytes} bytes, not {binding}"
    );
    gpu
}

#[test]
fn a_table_larger_than_a_binding_is_read_in_windows() {
    run(async {
        let gpu = gpu_binding_less_than(ROWS * WIDTH * 4).await;
        let values: Vec<f32> = uniform(ROWS * WIDTH, -1.0, 1.0, 3)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        // Rows at both ends of the windows (lavapipe's first holds 524,288), and others.
        let mut rows = vec![0, 524_287, 524_288, ROWS as u32 - 1];
        rows.extend(indices(16, ROWS as u32, 1));
        let (x, targets) = (uniform(20 * WIDTH, -1.0, 1.0, 2), &rows[..20]);
        let mut got = Vec::new();
        for device in [Device::Cpu, gpu.clone()] {
            let table = Tensor::from_vec(values.clone(), &[ROWS, WIDTH], &device).unwrap();
            let idx = Tensor::from_u32(rows.clone(), &[rows.len()], &device).unwrap();
            let gathered = table.embedding(&idx).unwrap();
            let x = Tensor::from_f64(x.clone(), &[20, WIDTH], &device)
                .unwrap()
                .with_grad();
            let t = Tensor::from_u32(targets.to_vec(), &[20], &device).unwrap();
            let loss = x.linear_cross_entropy((&table, None), &t, 8).unwrap();
            let dx = loss.backward().unwrap().take(&x).unwrap();
            got.push([
                gathered.to_vec_f64().await.unwrap(),
                loss.to_vec_f64().await.unwrap(),
                dx.to_vec_f64().await.unwrap(),
            ]);
            if device.is_gpu() {
                let whole = x.matmul_t(&table, false, true);
                let refused = whole.err().map(|e| e.to_string()).unwrap_or_default();
                assert!(refused.contains("maxStorageBufferBindingSize"), "{refused}");
            }
        }
        let [gathered, loss, dx] = &got[1];
        let [cpu_gathered, cpu_loss, cpu_dx] = &got[0];
        assert_eq!(gathered, cpu_gathered, "the rows gathered");
        assert_close("the loss", loss, cpu_loss, 1e-5);
        assert_close("the input's gradient", dx, cpu_dx, 1e-4);
    });
}

/// The same through an f16 table (a frozen table held in f16, src/tensor/half.rs), whose
/// windows start 128 rows apart: as the f32 table of its rounded values, whose own windows the
/// test above checks against the CPU.
#[test]
fn an_f16_table_larger_than_a_binding_is_read_in_windows_as_its_f32_values() {
    const F16_ROWS: usize = 1_100_000;
    run(async {
        let gpu = gpu_binding_less_than(F16_ROWS * WIDTH * 2).await;
        let values = uniform(F16_ROWS * WIDTH, -1.0, 1.0, 4);
        let rounded: Vec<f32> = common::frozen_f16::rounded(&values)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let halves = Tensor::from_f64_as_f16(values, &[F16_ROWS, WIDTH], &gpu).unwrap();
        let widened = Tensor::from_vec(rounded, &[F16_ROWS, WIDTH], &gpu).unwrap();
        // Rows at both ends of the f16 table's windows (on lavapipe its first holds 1,048,448:
        // as many as 65,535 workgroups of the product cover, 16 columns each, in steps of 128)
        // and of the f32 one's (524,288 each), and others.
        let mut rows = vec![0, 524_288, 1_048_447, 1_048_448, F16_ROWS as u32 - 1];
        rows.extend(indices(15, F16_ROWS as u32, 5));
        let x = uniform(20 * WIDTH, -1.0, 1.0, 6);
        let mut got = Vec::new();
        for table in [&halves, &widened] {
            let idx = Tensor::from_u32(rows.clone(), &[rows.len()], &gpu).unwrap();
            let gathered = table.embedding(&idx).unwrap();
            let x = Tensor::from_f64(x.clone(), &[20, WIDTH], &gpu)
                .unwrap()
                .with_grad();
            let t = Tensor::from_u32(rows[..20].to_vec(), &[20], &gpu).unwrap();
            let loss = x.linear_cross_entropy((table, None), &t, 8).unwrap();
            let dx = loss.backward().unwrap().take(&x).unwrap();
            got.push([
                gathered.to_vec_f64().await.unwrap(),
                loss.to_vec_f64().await.unwrap(),
                dx.to_vec_f64().await.unwrap(),
            ]);
        }
        let [gathered, loss, dx] = &got[0];
        let [want_gathered, want_loss, want_dx] = &got[1];
        assert_eq!(gathered, want_gathered, "the rows gathered");
        assert_close("the loss", loss, want_loss, 1e-5);
        assert_close("the input's gradient", dx, want_dx, 1e-4);
    });
}

/// A one-block GPT-2 of GPT-2's own vocabulary and width (its token embedding 154 MB, more
/// than lavapipe binds) fine-tuned with LoRA: the CPU's logits, loss and adapters' gradients,
/// its table read in windows (no padded copy of it for the loss).
#[test]
fn gpt2_s_table_larger_than_a_binding_gives_the_cpu_s_loss_and_gradients() {
    lora_gpt_gives_the_cpu_s_loss_and_gradients(50_257, 768, false);
}

/// The same GPT-2 with its base held in f16 (`Init::hold_frozen_in_f16`): its table, 77 MB
/// in f16, binds whole where the f32 one would not, so it is kept padded in f16 as a table
/// that binds (no f32 copy padded each step, which an f16 table cannot be copied into).
#[test]
fn gpt2_s_table_held_in_f16_binds_whole_and_gives_the_cpu_s_loss_and_gradients() {
    lora_gpt_gives_the_cpu_s_loss_and_gradients(50_257, 768, true);
}

/// A LoRA GPT whose frozen token embedding binds whole: kept padded (the vocabulary of 2,001
/// to 2,004 words), the embedding a view of its first rows, for the CPU's logits, loss and
/// adapters' gradients.
#[test]
fn a_frozen_padded_table_gives_the_cpu_s_loss_and_gradients() {
    lora_gpt_gives_the_cpu_s_loss_and_gradients(2_001, 64, false);
}

/// A one-block GPT of `vocab` words and `width` with LoRA of rank 2, its base held in f16 or
/// not: its logits, loss and adapters' gradients on the GPU are the CPU's.
fn lora_gpt_gives_the_cpu_s_loss_and_gradients(vocab: usize, width: usize, f16: bool) {
    use webgrad::nn::{Gpt, GptConfig, Init, LoraConfig, Model, Module};
    run(async {
        let config = GptConfig {
            vocab,
            context: 16,
            layers: 1,
            heads: width / 64,
            width,
            dropout: 0.0,
            norm: Default::default(),
            lora: Some(LoraConfig {
                rank: 2,
                alpha: 2.0,
            }),
        };
        let gpu = common::gpu().await;
        let mut got = Vec::new();
        for device in [Device::Cpu, gpu] {
            let mut init = Init::new(5, &device);
            init.hold_frozen_in_f16(f16);
            let gpt = Gpt::new(&config, &mut init).unwrap();
            let tokens = Tensor::from_u32(indices(16, vocab as u32, 1), &[1, 16], &device).unwrap();
            let targets = Tensor::from_u32(indices(16, vocab as u32, 2), &[16], &device).unwrap();
            let logits = gpt.forward(&tokens).unwrap().to_vec_f64().await.unwrap();
            let loss = gpt.loss(&tokens, &targets, None).unwrap();
            let grads = loss.backward().unwrap();
            let mut adapters = Vec::new();
            for (name, p) in gpt.parameters() {
                if let Some(g) = grads.get(&p) {
                    adapters.push((name, g.to_vec_f64().await.unwrap()));
                }
            }
            got.push((logits, loss.to_vec_f64().await.unwrap(), adapters));
        }
        let ((cpu_logits, cpu_loss, cpu_grads), (logits, loss, grads)) = (&got[0], &got[1]);
        assert_close("the logits", logits, cpu_logits, 1e-4);
        assert_close("the loss", loss, cpu_loss, 1e-5);
        assert_eq!(
            grads.len(),
            8,
            "the four adapters' A and B, and nothing else"
        );
        for ((name, g), (_, want)) in grads.iter().zip(cpu_grads) {
            assert_close(&format!("the gradient of {name}"), g, want, 1e-4);
        }
    });
}

/// From the command line, a one-block GPT-2 file of GPT-2's vocabulary and width (its table
/// larger than lavapipe binds) samples, and fine-tunes with LoRA into a merged file that holds
/// the same table.
#[test]
fn the_cli_samples_and_fine_tunes_a_gpt2_whose_table_exceeds_a_binding() {
    let dir = common::gpt2_files::written_sized((50_257, 768), "wide", 1.0);
    let model = dir.join("model.safetensors");
    let model = model.to_str().unwrap();
    let sample = [
        "sample", "--load", model, "--prompt", "Hello", "--tokens", "4",
    ];
    let (code, out, err) = common::cli(&sample);
    assert_eq!(code, 0, "{err}");
    assert!(out.len() > "Hello\n".len(), "nothing sampled: {out:?}");
    let text = dir.join("mine.txt");
    std::fs::write(
        &text,
        "The quick brown fox jumps over the lazy dog. ".repeat(60),
    )
    .unwrap();
    let merged = dir.join("merged/model.safetensors");
    std::fs::create_dir_all(dir.join("merged")).unwrap();
    let (text, merged_path) = (text.to_str().unwrap(), merged.to_str().unwrap());
    let train = [
        "train",
        "--task",
        "text",
        "--load",
        model,
        "--lora-rank",
        "2",
        "--text",
        text,
        "--batch",
        "1",
        "--window",
        "16",
        "--steps",
        "1",
        "--eval-every",
        "1",
        "--save-merged",
        merged_path,
    ];
    let (code, out, err) = common::cli(&train);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"val_loss\""), "{out}");
    let table = |path: &std::path::Path| {
        let bytes = std::fs::read(path).unwrap();
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        st.tensor("wte.weight").unwrap().data().to_vec()
    };
    assert!(
        table(&merged) == table(dir.join("model.safetensors").as_path()),
        "the table changed"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
