//! Sampling through the key/value cache on the GPU: each position's logits are the whole
//! window's (the CPU's, in f64), and once the cache is made a new token takes no new buffer:
//! the cache is written in place, every tensor of a token the same size as the last one's.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::run;
use webgrad::nn::{Gpt, GptConfig, Init, KvCache, Model, Preset};
use webgrad::{Device, Tensor};

const VOCAB: usize = 65;

fn small(device: &Device) -> Gpt {
    Gpt::new(
        &GptConfig::preset(Preset::Small, VOCAB),
        &mut Init::new(5, device),
    )
    .unwrap()
}

fn tokens(n: usize) -> Vec<u32> {
    (0..n).map(|i| (i * 11 % VOCAB) as u32).collect()
}

/// The logits after each of `tokens[first - 1..]`, the first `first` fed at once and the rest
/// one at a time, through a cache of `capacity` positions.
async fn cached_logits(gpt: &Gpt, tokens: &[u32], first: usize, capacity: usize) -> Vec<Vec<f32>> {
    let device = gpt.device().clone();
    let mut cache = KvCache::new(capacity);
    let mut out = Vec::new();
    let mut fed = 0;
    while fed < tokens.len() {
        let n = if fed == 0 { first } else { 1 };
        let x = Tensor::from_u32(tokens[fed..fed + n].to_vec(), &[1, n], &device).unwrap();
        out.push(
            gpt.forward_cached(&x, &mut cache)
                .unwrap()
                .to_vec()
                .await
                .unwrap(),
        );
        fed += n;
        assert_eq!(cache.len(), fed);
    }
    out
}

#[test]
fn cached_logits_on_the_gpu_are_the_whole_windows() {
    run(async {
        let device = common::gpu().await;
        let gpu_model = small(&device);
        let cpu_model = small(&Device::Cpu);
        let t = tokens(40);
        let x = Tensor::from_u32(t.clone(), &[1, t.len()], &Device::Cpu).unwrap();
        let whole = cpu_model.forward(&x).unwrap().to_vec().await.unwrap();
        // A cache larger than the text: the positions never written are masked.
        let got = cached_logits(&gpu_model, &t, 7, 60).await;
        for (j, row) in got.iter().enumerate() {
            let position = 6 + j;
            let want = &whole[position * VOCAB..(position + 1) * VOCAB];
            for (g, w) in row.iter().zip(want) {
                assert!((g - w).abs() < 1e-4, "position {position}: {g} against {w}");
            }
        }
    });
}

#[test]
fn a_token_after_the_first_takes_no_new_buffer() {
    run(async {
        let device = common::gpu().await;
        let Device::Gpu(gpu) = &device else {
            unreachable!()
        };
        let gpt = small(&device);
        let t = tokens(70);
        let mut cache = KvCache::new(t.len());
        let feed = |from: usize, n: usize, cache: &mut KvCache| {
            let x = Tensor::from_u32(t[from..from + n].to_vec(), &[1, n], &device).unwrap();
            gpt.forward_cached(&x, cache).unwrap()
        };
        feed(0, 5, &mut cache).to_vec().await.unwrap();
        for i in 5..7 {
            feed(i, 1, &mut cache).to_vec().await.unwrap();
        }
        let mark = gpu.counters();
        for i in 7..t.len() {
            feed(i, 1, &mut cache).to_vec().await.unwrap();
        }
        let c = gpu.counters().since(&mark);
        // Grown by joining, its keys and values (4 heads × 32 wide) went through 14 size
        // classes from 8 positions to 70.
        assert_eq!(c.buffers_created, 0, "{c:?}");
        assert_eq!(c.bytes_allocated, mark.bytes_allocated, "{c:?}");
        // Full: one more position is refused, not grown.
        let one = Tensor::from_u32(vec![1], &[1, 1], &device).unwrap();
        assert!(gpt.forward_cached(&one, &mut cache).is_err());
    });
}
