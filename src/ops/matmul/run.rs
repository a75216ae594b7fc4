//! A product on the GPU: its plan (plan.rs) made for the device's tuning and its operands, the
//! kernel's parameters and operands (f16 copies on the matrix units: operand_f16.rs), and the
//! dispatches, into fresh buffers or into given ones.

use super::choices;
use super::epilogue::{Causal, Epilogue, Store};
use super::layout::{cpu_matmul, Dims, Layout, Views};
use super::operand_f16::{f16_copy, Operand, ROW_HALVES};
use super::plan::{plan, plan_variant, Needs, Plan};
use super::split::Split;
use super::split_sum;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, ProductVariant};
use crate::ops::dropout::DropoutMask;
use crate::ops::{gpu_of, launch, launch1, launch_into, vec4_buffers};
use crate::tensor::{DType, Host, Storage, Tensor};
use std::rc::Rc;

crate::kernel_params! {
    /// shaders/matmul_out.wgsl's parameters, shared by every matmul kernel: the sizes, how K
    /// is split (split.rs; one part of all of K where it is not) and the layouts.
    pub(super) struct MatmulParams {
        m: u32, n: u32, k: u32, a_batch_stride: u32, b_batch_stride: u32, k_chunk: u32, parts: u32,
        heads: u32,
        a_offset: u32, a_head_stride: u32, a_row_stride: u32,
        b_offset: u32, b_head_stride: u32, b_row_stride: u32,
        c_offset: u32, c_batch_stride: u32, c_head_stride: u32, c_row_stride: u32,
        sums_offset: u32,
        drop_seed: u32, drop_p: f32, drop_scale: f32,
    }
}

/// The kernels' parameters for `d` at `views` with K split by `split`, and C's dropout if any.
pub(super) fn params(
    views: &Views,
    d: Dims,
    split: Split,
    dropout: Option<DropoutMask>,
) -> MatmulParams {
    let u = |x: usize| x as u32;
    MatmulParams {
        m: u(d.m),
        n: u(d.n),
        k: u(d.k),
        a_batch_stride: u(views.a.batch),
        b_batch_stride: u(views.b.batch),
        k_chunk: u(split.k_chunk),
        parts: u(split.parts),
        heads: u(views.heads),
        a_offset: u(views.a.offset),
        a_head_stride: u(views.a.head),
        a_row_stride: u(views.a.row),
        b_offset: u(views.b.offset),
        b_head_stride: u(views.b.head),
        b_row_stride: u(views.b.row),
        c_offset: u(views.c.offset),
        c_batch_stride: u(views.c.batch),
        c_head_stride: u(views.c.head),
        c_row_stride: u(views.c.row),
        sums_offset: u(views.row_sums.unwrap_or(0)),
        drop_seed: dropout.map_or(0, |m| m.seed),
        drop_p: dropout.map_or(0.0, |m| m.p),
        drop_scale: dropout.map_or(1.0, |m| m.scale()),
    }
}

/// The plan of a product on `gpu`: the variant `forced` (a timing's), else the one measured
/// fastest for its shape, else the planner's, and then the shape is noted to be measured
/// (cheaply: this runs for every product; the measurement works out its candidates). A
/// variant forced on a shape that cannot take it is an error; one chosen under another tuning
/// (a test's) gives way to the planner's.
fn chosen_plan(
    gpu: &Rc<Gpu>,
    (d, views): (Dims, Views),
    needs: Needs,
    tb: bool,
    forced: Option<ProductVariant>,
) -> Result<Plan> {
    let tuning = gpu.tuning();
    let planned = plan((d, views), needs, &tuning);
    // The emulated GPUs' kernel has no variants to measure.
    if forced.is_none() && planned.variant().is_none() {
        return Ok(planned);
    }
    let Some(shape) = choices::shape_of(d, &views, needs, (tb, &tuning)) else {
        return Ok(planned);
    };
    let chosen = forced.or_else(|| gpu.product_variants().chosen(&shape));
    let Some(variant) = chosen.filter(|&v| Some(v) != planned.variant()) else {
        if chosen.is_none() {
            gpu.product_variants().note(shape);
        }
        return Ok(planned);
    };
    if choices::allowed(shape, variant, &tuning) {
        return Ok(plan_variant((d, views), needs, &tuning, variant));
    }
    match forced {
        Some(_) => Err(Error::Invalid {
            op: "matmul",
            why: format!("{shape:?} cannot run as {variant:?}"),
        }),
        None => Ok(planned),
    }
}

/// Whether the product A · op(B) of dense operands in fresh buffers (whole vec4s) runs on the
/// f16 kernels on `gpu`, as `planned` will plan it (the timing's choice for its shape
/// included), its epilogue `splittable` or not: for an op that makes a value such a product
/// reads next, to decide in which precision (`linear_reads_f16`, a gradient through a GELU).
pub(super) fn runs_in_f16(gpu: &Rc<Gpu>, d: Dims, tb: bool, splittable: bool) -> Result<bool> {
    let needs = Needs {
        epilogue_splittable: splittable,
        vec4_buffers: true,
        ..Needs::default()
    };
    let views = Views::dense(d, (false, tb), (0, 0));
    Ok(chosen_plan(gpu, (d, views), needs, tb, None)?.in_f16())
}

/// A product as planned: its kernel with the transposes set, its parameters, the operands it
/// binds (on the matrix units their f16 copies) and its plan.
struct Planned {
    kernel: Kernel,
    params: MatmulParams,
    operands: [Tensor; 2],
    plan: Plan,
}

/// The plan of a product on `gpu`, its kernel, parameters and operands; the plan is counted
/// by its path (`Gpu::dispatches_of` counts its kernel's dispatches).
fn planned(
    gpu: &Rc<Gpu>,
    (d, views): (Dims, Views),
    (ta, tb): (bool, bool),
    operands: [&Tensor; 2],
    (epilogue, forced): (&Epilogue, Option<ProductVariant>),
) -> Result<Planned> {
    let needs = Needs {
        a_transposed: ta,
        causal: epilogue.causal,
        epilogue_splittable: epilogue.gelu_grad.is_none()
            && epilogue.dropout.is_none()
            && epilogue.row_bias.is_none(),
        vec4_buffers: vec4_buffers(&operands, "matmul")?,
    };
    let plan = chosen_plan(gpu, (d, views), needs, tb, forced)?;
    let max = gpu.limits().max_compute_workgroups_per_dimension;
    if let Some(&too_many) = plan.groups.iter().find(|&&g| g > max) {
        return Err(Error::TooLarge {
            limit: "maxComputeWorkgroupsPerDimension",
            requested: too_many as u64,
            max: max as u64,
        });
    }
    let kernel = plan.kernel.clone().constant("TA", ta).constant("TB", tb);
    let [a, b] = operands;
    let (operands, views, kernel) = match plan.in_f16() {
        true => {
            let (copies, views) = f16_operands(gpu, [a, b], (d, views), (ta, tb))?;
            (copies, views, kernel)
        }
        // B stored as f32, or as f16 (a frozen weight, or a GELU's output: `gelu_input`);
        // A as f32, widened where it is f16 (a GELU's output whose product the timing put on
        // an f32 kernel). `checked_dims` admits no other.
        false => {
            let kernel = kernel.slot("B_TYPE", b.dtype().name());
            ([a.to_f32()?, b.clone()], views, kernel)
        }
    };
    let params = params(&views, d, plan.split, epilogue.dropout);
    Ok(Planned {
        kernel,
        params,
        operands,
        plan,
    })
}

/// The f16 copies of a product's operands for the matrix units (operand_f16.rs), and the
/// views with their layouts.
fn f16_operands(
    gpu: &Rc<Gpu>,
    [a, b]: [&Tensor; 2],
    (d, views): (Dims, Views),
    (ta, tb): (bool, bool),
) -> Result<([Tensor; 2], Views)> {
    let [a_stored, b_stored] = d.stored((ta, tb));
    let copy = |x: &Tensor, layout: Layout, (rows, cols): (usize, usize)| {
        let operand = Operand {
            x,
            layout,
            rows,
            cols,
        };
        f16_copy(gpu, operand, d, views.heads)
    };
    let (a, a_layout) = copy(a, views.a, a_stored)?;
    let (b, b_layout) = copy(b, views.b, b_stored)?;
    let views = Views {
        a: a_layout,
        b: b_layout,
        ..views
    };
    Ok(([a, b], views))
}

/// How `plan`'s kernel stores C: in f16 where the epilogue allows it (`Epilogue::f16_store`)
/// and the kernel is an f16 one storing whole vec4s into rows of whole packets of halves,
/// which the products that read C next then take as they lie (operand_f16.rs); else f32.
/// Not with row sums, which are f32 after C.
fn c_store(plan: &Plan, (d, views): (Dims, &Views), epilogue: &Epilogue) -> Store {
    let halves = plan.in_f16() && plan.whole_vec4s && d.n.is_multiple_of(ROW_HALVES);
    let whole = plan.split.parts == 1 && views.row_sums.is_none();
    match epilogue.f16_store && halves && whole {
        true => Store::Halves,
        false => Store::f32(plan.whole_vec4s),
    }
}

/// The product on the GPU: the planned kernel (or the variant `forced`) over the operands
/// (with their batch strides), the epilogue's bias and residual bound after them; C in f32,
/// or in f16 where `c_store` says (the dtype returned says which).
pub(super) fn gpu_product(
    gpu: &Rc<Gpu>,
    [(a, sa), (b, sb)]: &[(Tensor, usize); 2],
    d: Dims,
    (ta, tb): (bool, bool),
    (epilogue, forced): (Epilogue, Option<ProductVariant>),
) -> Result<(Storage, DType)> {
    let views = Views::dense(d, (ta, tb), (*sa, *sb));
    let planned = planned(gpu, (d, views), (ta, tb), [a, b], (&epilogue, forced))?;
    let Planned {
        kernel,
        params,
        operands: [a_bound, b_bound],
        plan,
    } = planned;
    if plan.split.parts > 1 {
        // The chunks' partial products side by side, then their sum with the epilogue.
        let kernel = Epilogue::default().slots(kernel, Store::f32(plan.whole_vec4s));
        let len = plan.split.parts * d.batches * d.m * d.n;
        let bound = [&a_bound, &b_bound];
        let [parts] = launch(gpu, &kernel, &params, &bound, [len], plan.groups)?;
        let sum = split_sum::sum(parts, a, d, plan.split, &epilogue)?;
        return Ok((sum, DType::F32));
    }
    let store = c_store(&plan, (d, &views), &epilogue);
    let kernel = epilogue.slots(kernel, store);
    let mut inputs = vec![&a_bound, &b_bound];
    inputs.extend(epilogue.bias);
    inputs.extend(epilogue.row_bias);
    inputs.extend(epilogue.residual);
    inputs.extend(epilogue.gelu_grad);
    inputs.extend(epilogue.relu_grad);
    let dtype = match store {
        Store::Halves => DType::F16,
        Store::Values | Store::Vec4s => DType::F32,
    };
    let words = dtype.bytes(d.batches * d.m * d.n) as usize / 4;
    let storage = launch1(gpu, &kernel, &params, &inputs, words, plan.groups)?;
    Ok((storage, dtype))
}

/// op(a) · op(b) batched, each matrix where `views` says, written into `target` (which other
/// products may fill in other parts), skipping what `causal` says gives nothing: outside the
/// graph. Attention's products through the scores, on the heads in place.
pub(crate) fn matmul_into(
    target: &mut Storage,
    [a, b]: [&Tensor; 2],
    (d, views): (Dims, Views),
    (ta, tb): (bool, bool),
    causal: Causal,
) -> Result<()> {
    let target_len = match &*target {
        Storage::Host(Host::F(c)) => c.len(),
        Storage::Gpu(c) => (c.handle().binding_size() / 4) as usize,
        _ => 0,
    };
    views.check(d, (ta, tb), [a.numel(), b.numel(), target_len])?;
    match (gpu_of(a.device()), target) {
        (None, Storage::Host(Host::F(c))) => {
            let (av, bv) = (a.host_f64("matmul")?, b.host_f64("matmul")?);
            cpu_matmul([&av, &bv], c, d, (ta, tb), views);
            Ok(())
        }
        (Some(gpu), Storage::Gpu(c)) => {
            if views.row_sums.is_some() && (!ta || gpu.is_cpu_emulated()) {
                return Err(Error::Invalid {
                    op: "matmul",
                    why: "row sums come with A transposed on the tiled kernels only".into(),
                });
            }
            let epilogue = Epilogue {
                causal,
                ..Epilogue::default()
            };
            let Planned {
                kernel,
                params,
                operands: [a, b],
                plan,
            } = planned(gpu, (d, views), (ta, tb), [a, b], (&epilogue, None))?;
            let kernel = epilogue.slots(kernel, Store::f32(plan.whole_vec4s));
            let [] = launch_into(gpu, &kernel, &params, &[&a, &b], &[c], [], plan.groups)?;
            Ok(())
        }
        _ => Err(Error::Invalid {
            op: "matmul",
            why: "the target is not on the operands' device".into(),
        }),
    }
}
