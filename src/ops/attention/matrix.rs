//! Causal attention on the GPU's matrix units (shaders/attention_coop*.wgsl): the
//! FlashAttention tiling of tiled.rs with its products on the matrix units, in a run that
//! asked for f16 where the adapter offers them: cooperative matrices natively, subgroup
//! matrices in Chrome (the kernels' dialect include, `MatrixUnits::attention_units`). q, k, v
//! and dO are read in f16 where their products stored them so (packed.rs,
//! `attention_reads_f16`), else as f32 rounded to f16 as the kernels stage them, and dq, dk and
//! dv are stored in f16 where the q, k, v layer's product reads them so (packed.rs); the sums and
//! the softmax's statistics are f32, the probabilities and their gradients are rounded to f16 for
//! the products that take them (as PyTorch's flash attention under autocast does). Neither the
//! T × T scores nor probabilities kept for the backward reach memory, nor any f16 copy.
//!
//! On an H200 (docs/log/products.md) nanochar's step spends 2.65 ms in the three kernels from
//! f16 inputs (3.31 from f32); the path through the scores (scores.rs), before these kernels,
//! spent 3.3 ms in its six products and 0.9 in the softmax and its gradient. Which of these kernels and the
//! scores runs is timed on the user's GPU (src/tune/attention.rs), in Chrome as natively.

use super::Dims;
use crate::error::Result;
use crate::gpu::{F16Products, Gpu, Kernel, MatrixUnits, PooledBuffer};
use crate::ops::{launch, launch_into};
use crate::tensor::{gpu_output, DType, Storage, Tensor};
use std::rc::Rc;

/// Rows (queries or keys) per workgroup, and the only head width the kernels take.
const ROWS: usize = 64;
const HEAD: usize = 64;
/// The most workgroup memory a kernel takes (attention_coop_common.wgsl): an f32 tile of 4
/// strips of 16 rows of 68, three f16 tiles of 64 rows of 72 (the strips' operands and two
/// staged blocks), and the key side's 64 queries' lse and delta.
const WORKGROUP_BYTES: u64 = 4 * 16 * 68 * 4 + 3 * 64 * 72 * 2 + 2 * 64 * 4;

crate::kernel_params! {
    /// shaders/attention_coop_common.wgsl: the sizes and scale, and where q, k and v lie in
    /// their packed tensor (and their gradients in theirs), in values.
    struct CoopParams {
        t: u32, heads: u32, c: u32, stride: u32, q_off: u32, k_off: u32, v_off: u32, scale: f32,
    }
}

/// The matrix units attention of these sizes runs on, if any: a run in f16 on matrix units,
/// heads of 64, whole blocks of 64 positions (at least one), the kernels' workgroup
/// memory, and their workgroups within the dispatch's limit.
pub(super) fn units(gpu: &Gpu, dm: Dims) -> Option<MatrixUnits> {
    let Some(F16Products::MatrixUnits(units)) = gpu.tuning().f16_products else {
        return None;
    };
    let limits = gpu.limits();
    let most_groups = u64::from(limits.max_compute_workgroups_per_dimension);
    let fits = dm.d == HEAD
        && dm.t > 0
        && dm.t.is_multiple_of(ROWS)
        && u64::from(limits.max_compute_workgroup_storage_size) >= WORKGROUP_BYTES
        && [dm.t / ROWS, dm.batch * dm.heads]
            .iter()
            .all(|&n| n as u64 <= most_groups);
    fits.then_some(units)
}

/// The parameters for a packed [B, T, 3C] input (q, k and v side by side).
fn params(dm: Dims) -> CoopParams {
    let c = dm.c as u32;
    CoopParams {
        t: dm.t as u32,
        heads: dm.heads as u32,
        c,
        stride: 3 * c,
        q_off: 0,
        k_off: c,
        v_off: 2 * c,
        scale: dm.scale() as f32,
    }
}

/// A workgroup per 64 rows of each (batch, head): the (batch, head)s along the dispatch's fast
/// dimension, the blocks along its slow one, so that the kernels take the blocks with the most
/// work first (the GPU starts workgroups in the dispatch's order).
fn groups(dm: Dims) -> [u32; 3] {
    [(dm.batch * dm.heads) as u32, (dm.t / ROWS) as u32, 1]
}

/// A kernel in `units`' dialect, reading q, k, v and dO in `inputs` and storing its results in
/// `results` (f32 or f16 each: the INPUTS and RESULTS slots; only the gradients are stored in
/// f16).
fn kernel(
    (family, source): (&'static str, &'static str),
    units: MatrixUnits,
    (inputs, results): (DType, DType),
) -> Kernel {
    let read = match inputs {
        DType::F16 => "attention_inputs_f16",
        _ => "attention_inputs_f32",
    };
    let write = match results {
        DType::F16 => "attention_results_f16",
        _ => units.attention_results(),
    };
    Kernel::new(family, source, "main")
        .slot("UNITS", units.attention_units())
        .slot("INPUTS", read)
        .slot("RESULTS", write)
}

/// Forward over a packed [B, T, 3C] input: the output [B, T, C] and the log-sum-exp of each
/// row of scaled scores [B·H·T], as the tiled kernels keep it.
pub(super) fn forward(
    gpu: &Rc<Gpu>,
    units: MatrixUnits,
    dm: Dims,
    qkv: &Tensor,
) -> Result<[PooledBuffer; 2]> {
    let source = include_str!("../../../shaders/attention_coop.wgsl");
    let k = kernel(("attention_coop", source), units, (qkv.dtype(), DType::F32));
    let outputs = [dm.batch * dm.t * dm.c, dm.rows()];
    launch(gpu, &k, &params(dm), &[qkv], outputs, groups(dm))
}

/// Backward over a packed [B, T, 3C] input: its gradient, dq, dk and dv side by side, in
/// `grads` (f32, or f16 for a product that reads it so). The kernels read dO in q's, k's and
/// v's type: f16 inputs with an f32 dO (its product kept f32) are widened, not dO rounded
/// (`to_f16` holds a value past f16's range at its largest, where the kernels report it to the
/// loss scale), and an f16 dO beside f32 inputs too.
pub(super) fn backward_packed(
    gpu: &Rc<Gpu>,
    (units, grads): (MatrixUnits, DType),
    dm: Dims,
    qkv: &Tensor,
    [out, lse, g]: [&Tensor; 3],
) -> Result<PooledBuffer> {
    let (qkv, g) = match (qkv.dtype(), g.dtype()) {
        (DType::F16, DType::F16) => (qkv.clone(), g.clone()),
        _ => (qkv.to_f32()?, g.to_f32()?),
    };
    let (qkv, g) = (&qkv, &g);
    let all = gpu_output(gpu, grads.bytes(qkv.numel()) as usize / 4)?;
    let types = (qkv.dtype(), grads);
    let params = params(dm);
    let source = include_str!("../../../shaders/attention_coop_dq.wgsl");
    let dq = kernel(("attention_coop_dq", source), units, types);
    let inputs = [qkv, g, out, lse];
    let [delta] = launch_into(gpu, &dq, &params, &inputs, &[&all], [dm.rows()], groups(dm))?;
    let delta = Tensor::from_storage(
        vec![dm.rows()],
        DType::F32,
        qkv.device(),
        Storage::Gpu(delta),
    );
    let source = include_str!("../../../shaders/attention_coop_dkv.wgsl");
    let dkv = kernel(("attention_coop_dkv", source), units, types);
    let inputs = [qkv, g, lse, &delta];
    let [] = launch_into(gpu, &dkv, &params, &inputs, &[&all], [], groups(dm))?;
    Ok(all)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    /// The three kernels in `units`' dialect, each with every combination of what it reads
    /// (q, k, v and dO in f32 or f16) and stores (the gradients in f32 or f16, the output in
    /// f32), beside which of its storage bindings it writes.
    fn every_kernel(units: MatrixUnits) -> Vec<(Kernel, &'static [bool])> {
        let kernels: [(&str, &str, &'static [bool]); 3] = [
            (
                "attention_coop",
                include_str!("../../../shaders/attention_coop.wgsl"),
                &[false, true, true],
            ),
            (
                "attention_coop_dq",
                include_str!("../../../shaders/attention_coop_dq.wgsl"),
                &[false, false, false, false, true, true],
            ),
            (
                "attention_coop_dkv",
                include_str!("../../../shaders/attention_coop_dkv.wgsl"),
                &[false, false, false, false, true],
            ),
        ];
        let mut all = Vec::new();
        for (family, source, writable) in kernels {
            let results: &[DType] = match family {
                "attention_coop" => &[DType::F32],
                _ => &[DType::F32, DType::F16],
            };
            for inputs in [DType::F32, DType::F16] {
                for &r in results {
                    all.push((kernel((family, source), units, (inputs, r)), writable));
                }
            }
        }
        all
    }

    /// The three kernels as the pipeline cache builds them, without a device: expanded,
    /// validated by naga, through its SPIR-V writer, and their bindings against the launches
    /// above (lavapipe has no cooperative matrices to run them on).
    #[test]
    fn the_kernels_build_and_fit_their_launches() {
        for (k, writable) in every_kernel(MatrixUnits::Cooperative) {
            if let Err(e) = k.check_without_device::<CoopParams>(writable) {
                panic!("{}: {e}", k.label());
            }
        }
    }

    /// The same kernels in Chrome's dialect, which naga cannot read (Chrome compiles them on a
    /// GPU with subgroup matrices: the bench's attention check): expanded without template text
    /// left, and in Chrome's dialect only.
    #[test]
    fn the_kernels_expand_in_chromes_dialect() {
        for (k, _) in every_kernel(MatrixUnits::SubgroupMatrix) {
            let text = k.wgsl().unwrap();
            crate::gpu::assert_in_chromes_dialect(&text, &k.label());
        }
    }
}
