//! Causal attention for real GPUs in the FlashAttention tiling (shaders/attention_tiled*.wgsl):
//! one thread per query row (per key row in the key-side backward), blocks of keys or queries
//! staged in workgroup memory, the head's vectors in named registers (`//#repeat` blocks).

use super::Dims;
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, PooledBuffer};
use crate::ops::{launch, launch_into};
use crate::tensor::{gpu_output, DType, Storage, Tensor};
use std::rc::Rc;

/// Rows (query or key) per workgroup, as in the shaders.
const ROWS: usize = 64;
/// Widest head kept in registers: three vectors of 64 floats per thread.
const MAX_HEAD_VECS: usize = 16;

/// Rows staged per block: DEFAULT_BLOCK, or the device's `Tuning::attention_block` where set,
/// or the smallest where the default does not fit the workgroup memory (WebGPU's guaranteed
/// 16 KiB with a head of 64). On an H100 blocks of 64 made every kernel 1.5-1.7× as slow (more
/// workgroup memory, fewer workgroups at once) and blocks of 16 the backward ones ~1.3-1.8×.
const DEFAULT_BLOCK: usize = 32;
const SMALLEST_BLOCK: usize = 16;

/// How the tiled kernels run one attention: the head's width in vec4s and the rows staged
/// per block.
#[derive(Clone, Copy)]
pub(super) struct Plan {
    d4: usize,
    /// A slot of the shaders, so that another size needs no new shader text.
    block: usize,
}

/// The plan when the tiled kernels can run: a real GPU, a head width that is a multiple of 4
/// and at most 64, and workgroup memory for the blocks (the device's block where it has one,
/// else the default, else the smallest). Otherwise the row kernels of shaders/attention*.wgsl
/// run.
pub(super) fn plan(gpu: &Gpu, dm: Dims) -> Option<Plan> {
    let d4 = dm.d / 4;
    let limits = gpu.limits();
    let wanted = gpu.tuning().attention_block.unwrap_or(DEFAULT_BLOCK);
    let block = [wanted, DEFAULT_BLOCK, SMALLEST_BLOCK]
        .into_iter()
        .find(|&b| fits(gpu, dm.d, b))?;
    let usable = !gpu.is_cpu_emulated()
        && dm.d.is_multiple_of(4)
        && (1..=MAX_HEAD_VECS).contains(&d4)
        && (dm.batch * dm.heads) as u64 <= limits.max_compute_workgroups_per_dimension as u64;
    usable.then_some(Plan { d4, block })
}

/// Whether blocks of `block` rows of a head `d` wide fit the device's workgroup memory: the
/// forward kernel's, the most of the three (key and value blocks, and each row's scores for a
/// block).
fn fits(gpu: &Gpu, d: usize, block: usize) -> bool {
    let bytes = 2 * block * (d / 4) * 16 + block / 4 * ROWS * 16;
    bytes as u64 <= gpu.limits().max_compute_workgroup_storage_size as u64
}

fn kernel(family: &'static str, source: &'static str, d4: usize, block: usize) -> Kernel {
    Kernel::new(family, source, "main")
        .slot("D4", d4)
        .slot("BLOCK", block)
}

crate::kernel_params! {
    /// shaders/attention_tiled_common.wgsl: the attention's sizes and scale, then where q, k
    /// and v are, in vec4s: their row stride and column offsets.
    struct TiledParams {
        batch: u32, t: u32, c: u32, heads: u32, d: u32, scale: f32,
        stride4: u32, q_off4: u32, k_off4: u32, v_off4: u32,
    }
}

/// The kernels' parameters. `packed`: q, k and v are columns of one [B, T, 3C] tensor; else
/// each is its own [B, T, C] tensor.
fn layout(dm: Dims, packed: bool) -> TiledParams {
    let c4 = (dm.c / 4) as u32;
    let [stride4, q_off4, k_off4, v_off4] = if packed {
        [3 * c4, 0, c4, 2 * c4]
    } else {
        [c4, 0, 0, 0]
    };
    TiledParams {
        batch: dm.batch as u32,
        t: dm.t as u32,
        c: dm.c as u32,
        heads: dm.heads as u32,
        d: dm.d as u32,
        scale: dm.scale() as f32,
        stride4,
        q_off4,
        k_off4,
        v_off4,
    }
}

/// A workgroup per 64 rows (queries or keys) of each (batch, head).
fn groups(dm: Dims) -> [u32; 3] {
    [dm.t.div_ceil(ROWS) as u32, (dm.batch * dm.heads) as u32, 1]
}

/// Forward: the output [B, T, C] and the log-sum-exp per row [B·H·T]. With `packed`, the
/// three inputs are one [B, T, 3C] tensor (see `layout`).
pub(super) fn forward(
    gpu: &Rc<Gpu>,
    plan: Plan,
    (dm, packed): (Dims, bool),
    qkv: [&Tensor; 3],
) -> Result<[PooledBuffer; 2]> {
    let k = kernel(
        "attention_tiled",
        include_str!("../../../shaders/attention_tiled.wgsl"),
        plan.d4,
        plan.block,
    );
    launch(
        gpu,
        &k,
        &layout(dm, packed),
        &qkv,
        [dm.batch * dm.t * dm.c, dm.rows()],
        groups(dm),
    )
}

/// Backward over three [B, T, C] inputs: dq, dk and dv, each [B, T, C].
pub(super) fn backward_split(
    gpu: &Rc<Gpu>,
    plan: Plan,
    dm: Dims,
    qkv: [&Tensor; 3],
    [out, lse, g]: [&Tensor; 3],
) -> Result<[PooledBuffer; 3]> {
    let fresh = || gpu_output(gpu, g.numel());
    let grads = [fresh()?, fresh()?, fresh()?];
    let [dq, dk, dv] = &grads;
    backward(gpu, plan, (dm, false), qkv, [out, lse, g], [dq, dk, dv])?;
    Ok(grads)
}

/// Backward over one packed [B, T, 3C] input: its gradient, dq, dk and dv side by side.
pub(super) fn backward_packed(
    gpu: &Rc<Gpu>,
    plan: Plan,
    dm: Dims,
    qkv: &Tensor,
    [out, lse, g]: [&Tensor; 3],
) -> Result<PooledBuffer> {
    let all = gpu_output(gpu, qkv.numel())?;
    backward(gpu, plan, (dm, true), [qkv; 3], [out, lse, g], [&all; 3])?;
    Ok(all)
}

/// The three backward kernels, writing dq, dk and dv into `targets` where q, k and v were
/// read from (the same buffer three times when packed: no copy).
fn backward(
    gpu: &Rc<Gpu>,
    plan: Plan,
    (dm, packed): (Dims, bool),
    [q, k, v]: [&Tensor; 3],
    [out, lse, g]: [&Tensor; 3],
    [dq, dk, dv]: [&PooledBuffer; 3],
) -> Result<()> {
    let params = &layout(dm, packed);
    let kdq = kernel(
        "attention_tiled_dq",
        include_str!("../../../shaders/attention_tiled_dq.wgsl"),
        plan.d4,
        plan.block,
    );
    let inputs = [q, k, v, out, g, lse];
    let [delta] = launch_into(gpu, &kdq, params, &inputs, &[dq], [dm.rows()], groups(dm))?;
    let delta = Tensor::from_storage(vec![dm.rows()], DType::F32, q.device(), Storage::Gpu(delta));
    for (grad_k, target) in [(true, dk), (false, dv)] {
        let kernel = kernel(
            "attention_tiled_dkv",
            include_str!("../../../shaders/attention_tiled_dkv.wgsl"),
            plan.d4,
            plan.block,
        )
        .constant("GRAD_K", grad_k);
        let inputs = [q, k, v, g, lse, &delta];
        launch_into(gpu, &kernel, params, &inputs, &[target], [], groups(dm))?;
    }
    Ok(())
}
