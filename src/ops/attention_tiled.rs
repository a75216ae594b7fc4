//! Causal attention for real GPUs in the FlashAttention tiling (shaders/attention_tiled*.wgsl):
//! one thread per query row (per key row in the key-side backward), blocks of keys or queries
//! staged in workgroup memory, the head's vectors in named registers unrolled here.

use super::{generated_source, launch};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel, PooledBuffer};
use crate::tensor::{DType, Storage, Tensor};
use std::rc::Rc;

/// Rows (query or key) per workgroup, and rows per staged block: as in the shaders.
const ROWS: usize = 64;
const BLOCK: usize = 32;
/// Widest head kept in registers: three vectors of 64 floats per thread.
const MAX_HEAD_VECS: usize = 16;

/// The head width in vec4s when the tiled kernels can run: a real GPU, a head width that is a
/// multiple of 4 and at most 64, and workgroup memory for the blocks. Otherwise the row
/// kernels of shaders/attention*.wgsl run.
pub(super) fn head_vecs(gpu: &Gpu, d: usize, batch_heads: usize) -> Option<usize> {
    let d4 = d / 4;
    let workgroup_bytes = 2 * BLOCK * d4 * 16 + BLOCK / 4 * ROWS * 16;
    let fits = workgroup_bytes as u64 <= gpu.limits().max_compute_workgroup_storage_size as u64
        && batch_heads as u64 <= gpu.limits().max_compute_workgroups_per_dimension as u64;
    (!gpu.is_cpu_emulated() && d % 4 == 0 && (1..=MAX_HEAD_VECS).contains(&d4) && fits)
        .then_some(d4)
}

/// `source` with each line that holds `$` repeated for $ = 0..d4.
fn unrolled(source: &str, d4: usize) -> String {
    let mut text = String::with_capacity(source.len() * 2);
    for line in source.lines() {
        if line.contains('$') && !line.trim_start().starts_with("//") {
            for e in 0..d4 {
                text += &line.replace('$', &e.to_string());
                text.push('\n');
            }
        } else {
            text += line;
            text.push('\n');
        }
    }
    text
}

fn kernel(family: &'static str, source: &'static str, d4: usize) -> Kernel {
    let text = generated_source(family, d4.to_string(), || unrolled(source, d4));
    Kernel::new(family, text, "main").slot("D4", d4)
}

/// Forward: the output [B, T, C] and the log-sum-exp per row [B·H·T].
pub(super) fn forward(
    gpu: &Rc<Gpu>,
    d4: usize,
    params: &[u32],
    (batch, heads, t): (usize, usize, usize),
    qkv: [&Tensor; 3],
) -> Result<Vec<PooledBuffer>> {
    let k = kernel(
        "attention_tiled",
        include_str!("../../shaders/attention_tiled.wgsl"),
        d4,
    );
    let groups = [t.div_ceil(ROWS) as u32, (batch * heads) as u32, 1];
    launch(
        gpu,
        &k,
        params,
        &qkv,
        &[qkv[0].numel(), batch * heads * t],
        groups,
    )
}

/// Backward: dq, dk and dv, each [B, T, C].
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    gpu: &Rc<Gpu>,
    d4: usize,
    params: &[u32],
    (batch, heads, t): (usize, usize, usize),
    [q, k, v]: [&Tensor; 3],
    out: &Tensor,
    lse: &Tensor,
    g: &Tensor,
) -> Result<[PooledBuffer; 3]> {
    let groups = [t.div_ceil(ROWS) as u32, (batch * heads) as u32, 1];
    let rows = batch * heads * t;
    let kdq = kernel(
        "attention_tiled_dq",
        include_str!("../../shaders/attention_tiled_dq.wgsl"),
        d4,
    );
    let mut first = launch(
        gpu,
        &kdq,
        params,
        &[q, k, v, out, g, lse],
        &[q.numel(), rows],
        groups,
    )?;
    let delta = Tensor::from_storage(
        vec![rows],
        DType::F32,
        q.device(),
        Storage::Gpu(first.pop().expect("two outputs")),
    );
    let dq = first.pop().expect("two outputs");
    let key_side = |grad_k: bool| -> Result<PooledBuffer> {
        let kernel = kernel(
            "attention_tiled_dkv",
            include_str!("../../shaders/attention_tiled_dkv.wgsl"),
            d4,
        )
        .slot("GRAD_K", grad_k);
        let mut out = launch(
            gpu,
            &kernel,
            params,
            &[q, k, v, g, lse, &delta],
            &[q.numel()],
            groups,
        )?;
        Ok(out.pop().expect("one output"))
    };
    Ok([dq, key_side(true)?, key_side(false)?])
}
