//! How many dispatches one training step of each benchmark workload (webgrad::bench's model
//! and optimizer) records with the kernels for real GPUs: forward, cross-entropy, backward and
//! the update. In the browser every dispatch costs CPU time, so fusions must keep these counts
//! down. Batch 1 keeps the step cheap on lavapipe; at
//! the benchmark's batches a step records a few more (weight gradients split along their long
//! dimension and column sums in chunks then add a dispatch each): `webgrad bench` reports those.
//! At batch 1 the other way round: every product has few output tiles, so most split K and add
//! the sum of their chunks (src/ops/matmul/split.rs; +4 to +50 here, while at the benchmark's
//! batches on an H100 mlp went 24 → 29, cnn 50 → 53, gpt_small 174 → 179, nanochar 250 → 250).
//! The budgets are today's counts: a change that adds dispatches must say so here. nanochar
//! went 261 → 357 when its attention (256 positions) moved to the T×T scores
//! (src/ops/attention/scores.rs): 16 more per layer (the heads gathered and put back, six
//! batched products and two softmax passes instead of four fused kernels; at batch 1 four of
//! the products also split K), for 9 % less time per step on an H100 (docs/BENCHMARKS.md).
//! 357 → 285 when those products read and wrote the heads in place (src/ops/matmul/layout.rs):
//! 8 copies a layer fewer, and the four products that write heads no longer split K at batch 1
//! (at the benchmark's batch 64, 329 → 281 on an H100). gpt_small 205 → 173 and nanochar
//! 285 → 255 when a linear layer's bias gradient came out of its weight gradient's product
//! (src/ops/matmul/bias_grad.rs) instead of two column-sum passes (at the benchmark's batches
//! on an H100: gpt_small 195 → 151, nanochar 281 → 227, mlp 29 → 23, cnn 53 → 49). gpt_small
//! 173 → 165 and nanochar 255 → 243 when LayerNorm's backward added the residual connection's
//! gradient into dx as it stored it (`Backward::backward_adding`) instead of a sum of its own.
//! gpt_small 165 → 157 and nanochar 243 → 237 when the MLP's GELU passed its gradient on in the
//! store of the product that makes it (`Tensor::gelu_linear_residual`; at batch 1 gpt_small's
//! products through it also stopped splitting K, which the sum pass cannot follow).
//! Every count 2 lower when the cross-entropy's rows came out divided by their number, so that
//! the mean loss is their sum alone: no scaling pass forward, none backward.
//! mlp 20 → 18 and cnn 44 → 43 when a linear layer's ReLU came in its product's store
//! (`Tensor::linear_relu`; its backward still takes a pass, from the output).
//! cnn 43 → 38 when each convolution's bias (per channel, a row of its product) and ReLU came
//! in its product's store (`Tensor::conv2d_relu`), the bias's add and the ReLU no longer
//! passes of their own (at the benchmark's batch 128 on an H100: 48 → 44).
//! mlp 18 → 19, cnn 38 → 40, gpt_small 155 → 163 and nanochar 235 → 246 when the optimizer
//! gathered its gradients into its flat buffers by a kernel per seven of them
//! (src/optim/gather.rs) instead of a buffer copy each (6, 8, 52 and 76 copies): in the
//! browser a copy costs about as much CPU as a dispatch and ends the compute pass.
//! Every count 1 higher when `Tensor::full` filled on the GPU by a dispatch instead of an
//! upload: the backward's seed gradient of 1 (an upload per step interleaved with steps that
//! share a submit made the pool and the bind-group cache churn, and costs a queue write).
//! cnn 41 → 39 when `sum_to_shape` summed each run of neighbouring axes as one: a
//! convolution's bias gradient, [n, c, h, w] to [c], went from three reductions to two (at
//! batch 1 the batch's is none), and columns of at most 256 rows were summed in one pass.
//! mlp 20 → 18 and cnn 39 → 36 when the gradient of a ReLU's output came through the ReLU in
//! the store of the next layer's product (or of the pass summing its chunks of K), or in the
//! max pool's pass over it, and the ReLU's own pass was skipped (`Backward::stores_through_relu`).
//! Every count over a batch of more than one row 1 lower when the mean cross-entropy's backward
//! read its one gradient in every row (`PerRow::Shared`) instead of a copy spreading it over
//! the rows (gpt_small 164 → 163, nanochar 247 → 246; at batch 1 there was no copy).
//! cnn 36 → 34 when a convolution kept its forward's im2col for the weight's gradient instead
//! of unfolding its input again in backward.
//! Every count 2 lower when the mean cross-entropy of few logits came out of one pass (its
//! rows' losses and their sum in one workgroup) and backward started at the loss's rule with
//! its gradient of 1 as a constant instead of a tensor filled by a dispatch
//! (`Backward::backward_from_one`): mlp 18 → 16, cnn 34 → 32, gpt_small 163 → 161 and
//! nanochar 246 → 244 (at the benchmark's batches the GPTs' logits take two passes still).
//! At the benchmark's batches mlp 19 → 16 and cnn 33 → 31 when weight gradients over at most
//! 128 rows stopped being cut into chunks summed by a pass of their own (here gpt_small
//! 161 → 145: its sequence of 128 rows).
//! Every count here 1 lower (mlp 15, cnn 31, gpt_small 144, nanochar 243; at the benchmark's
//! batches the mlp's and the cnn's, whose logits are few) when the mean cross-entropy of few
//! logits made the logits' gradient in its forward pass, and backward took no pass for it.
//! WEBGRAD_PROFILE=1 prints the kernels of the step.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::run;
use webgrad::bench::{workload_model, workload_optimizer};
use webgrad::nn::Init;
use webgrad::optim::Optimizer;
use webgrad::train::{ModelConfig, Net};
use webgrad::{Counters, Device, Tensor};

/// Steps before the one counted. The pool lends a free buffer past 1 MiB of up to twice the
/// size asked for (src/gpu/pool.rs), so the first steps settle which buffers they take:
/// nanochar's makes its last buffer in its third step (in its second while each size kept
/// buffers of its own).
const WARM_UP_STEPS: usize = 4;

/// The counters of one step over `rows` rows (images; a GPT's one sequence) after
/// `WARM_UP_STEPS` steps.
async fn one_step(model: &ModelConfig, rows: usize, device: &Device) -> Counters {
    let Device::Gpu(gpu) = device else {
        unreachable!("common::gpu gives a GPU")
    };
    gpu.use_emulated_kernels(Some(false));
    let net = Net::new(model, &mut Init::new(0, device)).unwrap();
    let params = net.parameters();
    let mut optimizer = Optimizer::new(workload_optimizer(model), &params).unwrap();
    let (x, y) = match model {
        ModelConfig::Gpt(g) => (
            Tensor::from_u32(
                (0..g.context as u32).map(|i| i % 65).collect(),
                &[1, g.context],
                device,
            ),
            Tensor::from_u32(
                (1..=g.context as u32).map(|i| i % 65).collect(),
                &[g.context],
                device,
            ),
        ),
        _ => (
            Tensor::from_vec(vec![0.5; 784 * rows], &[rows, 784], device),
            Tensor::from_u32(vec![3; rows], &[rows], device),
        ),
    };
    let (x, y) = (x.unwrap(), y.unwrap());
    let mut counters = Counters::default();
    for _ in 0..WARM_UP_STEPS + 1 {
        let mark = gpu.counters();
        let loss = net.forward(&x).unwrap().cross_entropy(&y).unwrap();
        let grads = loss.backward().unwrap();
        optimizer.step(&params, &grads).unwrap();
        gpu.finished().await.unwrap();
        counters = gpu.counters().since(&mark);
    }
    if let Some(report) = gpu.profile_report() {
        println!("{report}");
    }
    gpu.use_emulated_kernels(None);
    counters
}

/// Runs a step of the workload `name` over `rows` rows and checks that it records at most
/// `budget` dispatches and, after warm-up, creates no buffer and no bind group.
fn check(name: &str, rows: usize, budget: u64) {
    let (model, _) = workload_model(name);
    run(async {
        let device = common::gpu().await;
        let c = one_step(&model, rows, &device).await;
        println!("{name}: {c:?}");
        assert!(
            c.dispatches <= budget,
            "{name}: {} dispatches, budget {budget}",
            c.dispatches
        );
        assert_eq!(
            (c.buffers_created, c.bind_groups_created),
            (0, 0),
            "{name}: {c:?}"
        );
    });
}

#[test]
fn mlp_step_dispatches() {
    check("mlp_mnist_b128", 1, 15);
}

/// At the bench's batch of 128 rows the weight gradients walk their short K whole, with no
/// pass summing chunks of it (src/ops/matmul/bias_grad.rs), and the forward's products split
/// their long K (784 and 512) with a pass summing it that adds the bias and ReLU.
#[test]
fn mlp_step_dispatches_at_the_bench_batch() {
    check("mlp_mnist_b128", 128, 15);
}

#[test]
fn cnn_step_dispatches() {
    check("cnn_mnist_b128", 1, 31);
}

#[test]
fn gpt_small_step_dispatches() {
    check("gpt_small_b32", 1, 144);
}

#[test]
fn gpt_nanochar_step_dispatches() {
    check("gpt_nanochar_b64", 1, 243);
}
