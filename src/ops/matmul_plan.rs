//! How a product runs: which kernel computes it on a GPU and with how many workgroups
//! (`plan`), and what its kernel adds to it as it stores C (`Epilogue`).

use super::dropout::DropoutMask;
use super::matmul::Dims;
use super::matmul_layout::{MatmulParams, Views};
use super::matmul_regs;
use super::matmul_split::Split;
use super::unary::gelu_grad;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, Tuning};
use crate::tensor::{DType, Tensor};
use std::rc::Rc;

/// Below this many 128×128 tiles a GPU would sit partly idle, so 64×64 tiles are used.
pub(super) const BIG_TILES_FROM: usize = 128;
/// Workgroup memory of the 128 × 128 kernel (shaders/matmul.wgsl: two 8 KiB tiles and 4 KiB of
/// row sums), above the 16 KiB WebGPU guarantees: a device offering less gets 64 × 64 tiles
/// (8 KiB). Natively the pipeline cache checks every kernel's declaration against the device
/// (`check_workgroup_memory`), which keeps this figure honest.
const BIG_TILE_WORKGROUP_BYTES: u32 = 20 << 10;
/// The large-tile product's choices that depend on the compiler the kernels go through
/// (`Tuning`): the two differ in what runs fast on the same GPU. The browser's were measured in
/// Chrome (Tint) on an H100 and an H200, the native ones through naga (docs/BENCHMARKS.md);
/// other browsers compile WGSL with their own.
struct BigTilePolicy {
    /// Products of at most this many rows stay on 64×64 tiles however many there are, a 128-row
    /// tile being half empty or more: a convolution's products, one per image of 32 or 64
    /// channels' rows. In Chrome on an H200 that took the cnn's page step from 0.711 to 0.600
    /// ms; natively the large tiles stayed faster (0.595 against 0.606), so there none do
    /// (docs/BENCHMARKS.md, "Few rows on small tiles in the browser").
    over_rows: usize,
    /// The same for columns: attention's products over a head's 64 values (probabilities times
    /// values, and their gradients), whose 128-column tiles are half empty. In Chrome on an
    /// H200 nanochar's ran 1.3-1.5× as long as natively on the large tiles.
    over_cols: usize,
    /// The same for depth: attention's scores and their gradient, products over a head's 64
    /// values, which ran 1.2× as long in Chrome as natively on the large tiles.
    over_depth: usize,
    /// Whether products with too few 128 × 128 tiles to fill the GPU take them anyway, with K
    /// split among more workgroups (`Split::of_big`). Natively yes. In Chrome on an H200 the
    /// small tiles, K split as `Split::of` splits it, ran gpt_small's products (4,096 rows of
    /// 128 to 512 columns) in less time: its page step went from 2.37-2.39 to 2.22-2.26 ms
    /// pipelined, as fast as native's (docs/BENCHMARKS.md, "Few tiles stay small in the
    /// browser").
    with_k_split: bool,
    /// Whether the kernel stages operands stored along K as blocks transposed in registers
    /// (shaders/matmul.wgsl, BLOCKS): faster through the browser's compiler, slower through
    /// naga, measured on an H100.
    transpose_in_registers: bool,
    /// Whether the kernel fetches the next slice into registers while it multiplies this one
    /// (PREFETCH). Natively always: without, nanochar's step took 41.0 ms instead of 33.9 on an
    /// H100. In Chrome never: with the parameters bound plainly (src/gpu/bind_groups.rs),
    /// nanochar's products with neither operand transposed took 0.391 ms a call without it
    /// against 0.498 with it on an H200, and those with one transposed were already faster
    /// without (docs/BENCHMARKS.md, "Parameters bound plainly").
    prefetch_next_slice: bool,
    /// Whether the fetches of a product with A transposed (weight gradients) load without a
    /// branch (BRANCHLESS). In Chrome on an H200 nanochar's weight gradients took 389 µs a call
    /// that way against 463; the products with neither or B transposed gained nothing or lost
    /// up to 9 %, and natively, with the prefetch, every product lost 12-46 %
    /// (docs/BENCHMARKS.md, "Loads without a branch").
    branchless_when_a_transposed: bool,
}

impl BigTilePolicy {
    fn of(tuning: Tuning) -> BigTilePolicy {
        let browser = tuning.in_browser();
        let small_side = if browser { 64 } else { 0 };
        BigTilePolicy {
            over_rows: small_side,
            over_cols: small_side,
            over_depth: small_side,
            with_k_split: !browser,
            transpose_in_registers: browser,
            prefetch_next_slice: !browser,
            branchless_when_a_transposed: browser,
        }
    }
}

/// Whether the buffers can be read as vec4s whole (shaders/matmul.wgsl binds them so): pool
/// buffers are, unless one was sized exactly to the device's largest.
pub(super) fn vec4_buffers(xs: &[&Tensor], op: &'static str) -> Result<bool> {
    for x in xs {
        if x.buffer(op)?.binding_size() % 16 != 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What a product of causal attention (src/ops/attention/scores.rs) knows to be zero or not
/// needed, so that the tiled kernels skip tiles or parts of K that give nothing. The emulated
/// GPUs' kernel and the CPU compute everything, which gives the same where it is needed.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Causal {
    /// A dense product.
    #[default]
    No = 0,
    /// Only C[i, j] with j ≤ i is needed (scores, and their gradient).
    OutputLower = 1,
    /// op(A)[i, k] is zero for k > i (probabilities times values or keys).
    ALower = 2,
    /// op(A)[i, k] is zero for k < i (transposed probabilities times queries or dO).
    AUpper = 3,
}

/// What a matmul adds to the product as it stores C.
#[derive(Default, Clone, Copy)]
pub(super) struct Epilogue<'a> {
    /// [N], added to every row (linear layers).
    pub(super) bias: Option<&'a Tensor>,
    /// [M], added to every column (a convolution's per-channel bias); not with `bias`.
    pub(super) row_bias: Option<&'a Tensor>,
    /// C's shape, added element by element (a residual connection).
    pub(super) residual: Option<&'a Tensor>,
    /// C's shape: C is multiplied by GELU's derivative at it, element by element (a gradient
    /// passed back through the GELU that made the product's input). Not with a residual.
    pub(super) gelu_grad: Option<&'a Tensor>,
    /// C's shape: C is kept where this ReLU output is positive and 0 elsewhere (a gradient
    /// passed back through the ReLU that made the product's input). Not with a residual.
    pub(super) relu_grad: Option<&'a Tensor>,
    /// What the product may skip (`Causal`): not an addition, but known as C is planned.
    pub(super) causal: Causal,
    /// Applied to the product before the residual is added (only with a residual).
    pub(super) dropout: Option<DropoutMask>,
    /// C through ReLU, after the bias (not with a residual or GELU's derivative: `check`).
    pub(super) relu: bool,
}

impl Epilogue<'_> {
    /// The slots every matmul kernel takes (shaders/matmul_out.wgsl): what is bound after A
    /// and B (the bias, then the residual), where C is, and whether C is stored a vec4 at a
    /// time (`vec4_stores`) or one value at a time. Reading the bias and the residual as vec4s
    /// too made no difference on an H100 (docs/BENCHMARKS.md).
    pub(super) fn slots(&self, kernel: Kernel, vec4_stores: bool) -> Kernel {
        let residual = self.residual.is_some();
        let bias = self.bias.is_some() || self.row_bias.is_some();
        let bias_kernel = match (self.bias, self.row_bias) {
            (Some(_), _) => "matmul_bias",
            (None, Some(_)) => "matmul_row_bias",
            (None, None) => "matmul_no_bias",
        };
        let pick = |yes: bool, names: [&'static str; 2]| names[yes as usize];
        // The residual's place: the residual, GELU's input for its derivative, ReLU's output
        // for its, ReLU (nothing bound), or nothing.
        let (tail, tail_kernel) = match self {
            Epilogue {
                residual: Some(_), ..
            } => (true, "matmul_residual"),
            Epilogue {
                gelu_grad: Some(_), ..
            } => (true, "matmul_gelu_grad"),
            Epilogue {
                relu_grad: Some(_), ..
            } => (true, "matmul_mask_relu"),
            Epilogue { relu: true, .. } => (false, "matmul_relu"),
            _ => (false, "matmul_no_residual"),
        };
        let kernel = kernel
            .slot("BIAS", bias_kernel)
            .slot("RESIDUAL", tail_kernel)
            .slot(
                "STORE",
                pick(vec4_stores, ["matmul_store_f32", "matmul_store_vec4"]),
            );
        let res = 3 + bias as usize;
        debug_assert!(
            self.combines(),
            "`check` refuses what the kernels do not combine"
        );
        let kernel = match residual {
            true => kernel.constant("DROPOUT", self.dropout.is_some()),
            false => kernel,
        };
        kernel.slot("RES", res).slot("OUT", res + tail as usize)
    }

    /// Whether the kernels combine these additions: one bias at most, by column or by row; one
    /// tail at most (the residual, GELU's or ReLU's derivative, or ReLU); dropout only before a
    /// residual.
    fn combines(&self) -> bool {
        let tails = [
            self.residual.is_some(),
            self.gelu_grad.is_some(),
            self.relu_grad.is_some(),
            self.relu,
        ];
        let one_tail = tails.iter().filter(|&&t| t).count() <= 1;
        let one_bias = self.bias.is_none() || self.row_bias.is_none();
        one_tail && one_bias && (self.dropout.is_none() || self.residual.is_some())
    }

    /// Checks the bias against N columns and the residual against C's shape, and that the
    /// additions are ones the kernels combine: one tail at most (the residual, GELU's
    /// derivative or ReLU), and dropout only before a residual.
    pub(super) fn check(&self, a: &Tensor, c_shape: &[usize]) -> Result<()> {
        let name = "matmul";
        if !self.combines() {
            return Err(Error::Invalid {
                op: name,
                why: "a product's store takes one bias, by column or by row, and one of a \
                      residual (after a dropout, if any), GELU's or ReLU's derivative, or ReLU"
                    .into(),
            });
        }
        let (m, n) = (c_shape[c_shape.len() - 2], c_shape[c_shape.len() - 1]);
        let tails = [
            (self.residual, c_shape),
            (self.gelu_grad, c_shape),
            (self.relu_grad, c_shape),
        ];
        let biases = [(self.bias, &[n][..]), (self.row_bias, &[m][..])];
        for (t, want) in biases.into_iter().chain(tails) {
            let Some(t) = t else { continue };
            t.expect_dtype(name, DType::F32)?;
            a.same_device(name, t)?;
            if t.shape() != want {
                return Err(Error::Shape {
                    op: name,
                    a: c_shape.to_vec(),
                    b: t.shape().to_vec(),
                    why: format!(
                        "a bias must be [{n}] (or [{m}] by row) and a residual the output's shape"
                    ),
                });
            }
        }
        Ok(())
    }

    /// The same on the CPU, into `c` of `n` columns.
    pub(super) fn add_cpu(&self, c: &mut [f64], n: usize) -> Result<()> {
        if let Some(bias) = self.bias {
            let bv = bias.host_f64("matmul")?;
            c.iter_mut().enumerate().for_each(|(i, x)| *x += bv[i % n]);
        }
        if let Some(bias) = self.row_bias {
            let bv = bias.host_f64("matmul")?;
            let m = bv.len();
            c.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x += bv[(i / n) % m]);
        }
        if let Some(mask) = self.dropout {
            c.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = mask.apply(i, *x));
        }
        if let Some(residual) = self.residual {
            let rv = residual.host_f64("matmul")?;
            c.iter_mut().zip(rv).for_each(|(x, r)| *x += r);
        }
        if self.relu {
            c.iter_mut().for_each(|x| *x = x.max(0.0));
        }
        if let Some(input) = self.gelu_grad {
            let xv = input.host_f64("matmul")?;
            c.iter_mut().zip(xv).for_each(|(v, x)| *v *= gelu_grad(x));
        }
        if let Some(output) = self.relu_grad {
            let yv = output.host_f64("matmul")?;
            c.iter_mut()
                .zip(yv)
                .for_each(|(v, y)| *v = if y > 0.0 { *v } else { 0.0 });
        }
        Ok(())
    }
}

/// Which kernel computes a product on `gpu`, and its workgroups: register blocking without
/// barriers on emulated GPUs; on real ones 128 × 128 tiles once there are enough of them to
/// fill a large GPU, more than 64 rows, operands read as whole vec4s (`vec4_buffers`) and the
/// workgroup memory they need, else 64 × 64 with K split when there are few tiles
/// (matmul_split.rs).
fn plan(
    gpu: &Gpu,
    (d, views): (Dims, Views),
    a_transposed: bool,
    operands: [&Tensor; 2],
    epilogue: &Epilogue,
) -> Result<Plan> {
    let (m, n, nb) = (d.m, d.n, d.batches as u32);
    let whole = Split::whole(d.k);
    // The split's sum pass adds a bias and a residual and applies ReLU or its derivative, but
    // knows no GELU, no dropout and no bias by row.
    let splittable = views.splittable(d)
        && epilogue.gelu_grad.is_none()
        && epilogue.dropout.is_none()
        && epilogue.row_bias.is_none();
    if gpu.is_cpu_emulated() {
        let (rows, cols) = (matmul_regs::rows_per_lane(m), matmul_regs::cols_per_lane(n));
        let groups = [m.div_ceil(8 * rows) as u32, n.div_ceil(cols) as u32, nb];
        return Ok(Plan {
            kernel: matmul_regs::kernel(rows, cols),
            groups,
            split: whole,
            whole_vec4s: false,
        });
    }
    let tuning = gpu.tuning();
    let policy = BigTilePolicy::of(tuning);
    let big_split = match splittable {
        true => Split::of_big(d, BIG_TILES_FROM, tuning),
        false => whole,
    };
    let enough_tiles = m.div_ceil(128) * n.div_ceil(128) * d.batches >= BIG_TILES_FROM;
    let big_tiles_fit = gpu.limits().max_compute_workgroup_storage_size >= BIG_TILE_WORKGROUP_BYTES;
    if big_tiles_fit
        && m > policy.over_rows
        && n > policy.over_cols
        && d.k > policy.over_depth
        && (enough_tiles || (policy.with_k_split && big_split.parts > 1))
        && vec4_buffers(&operands, "matmul")?
    {
        return Ok(large_tiles(
            (d, views),
            big_split,
            (epilogue.causal, a_transposed),
            &policy,
        ));
    }
    let split = if splittable { Split::of(d) } else { whole };
    let [x, y, z] = tiles(d, 64);
    let source = include_str!("../../shaders/matmul_small.wgsl");
    Ok(Plan {
        kernel: Kernel::new("matmul_small", source, "main")
            .constant("ROW_SUMS", views.row_sums.is_some())
            .constant("CAUSAL", epilogue.causal as u32),
        groups: [x, y, z * split.parts as u32],
        split,
        whole_vec4s: n % 4 == 0 && views.c.in_fours(),
    })
}

/// Workgroups of `side` × `side` tiles over C: [columns, rows, batches].
fn tiles(d: Dims, side: usize) -> [u32; 3] {
    [
        d.n.div_ceil(side) as u32,
        d.m.div_ceil(side) as u32,
        d.batches as u32,
    ]
}

/// The plan on the 128 × 128 kernel (shaders/matmul.wgsl), K split as `split` says, its
/// operands fetched as vec4s where their stored rows allow, skipping what `causal` says, and
/// with the variants `policy` picks for the device's compiler.
fn large_tiles(
    (d, views): (Dims, Views),
    split: Split,
    (causal, a_transposed): (Causal, bool),
    policy: &BigTilePolicy,
) -> Plan {
    // An operand whose stored rows are a multiple of 4 long is fetched as vec4s, even when
    // the other is not (the output layer's gradients over a vocabulary of 50,257).
    let (a_rows_of_4, b_rows_of_4) = (views.a.in_fours(), views.b.in_fours());
    let source = include_str!("../../shaders/matmul.wgsl");
    let kernel = Kernel::new("matmul", source, "main")
        .constant("VEC4_A", a_rows_of_4)
        .constant("VEC4_B", b_rows_of_4)
        .constant("SPLIT", split.parts > 1)
        .constant("CAUSAL", causal as u32)
        .constant("BLOCKS", policy.transpose_in_registers)
        .constant("PREFETCH", policy.prefetch_next_slice)
        .constant(
            "BRANCHLESS",
            policy.branchless_when_a_transposed && a_transposed,
        )
        .constant("WIDE", d.n > 64)
        .constant("ROW_SUMS", views.row_sums.is_some());
    let [x, y, z] = tiles(d, 128);
    Plan {
        kernel,
        groups: [x, y, z * split.parts as u32],
        split,
        whole_vec4s: d.n % 4 == 0 && views.c.in_fours(),
    }
}

/// How a product runs: its kernel and workgroups, how K is split, and whether the kernel's
/// threads hand C's columns over in whole vec4s (the tiled kernels over rows a multiple of 4
/// long), so that C can be stored a vec4 at a time.
pub(super) struct Plan {
    pub(super) kernel: Kernel,
    pub(super) groups: [u32; 3],
    pub(super) split: Split,
    pub(super) whole_vec4s: bool,
}

/// The plan of a product on `gpu`, its kernel with the transposes set, and its parameters.
pub(super) fn planned(
    gpu: &Rc<Gpu>,
    (d, views): (Dims, Views),
    (ta, tb): (bool, bool),
    operands: [&Tensor; 2],
    epilogue: &Epilogue,
) -> Result<(Kernel, MatmulParams, Plan)> {
    let plan = plan(gpu, (d, views), ta, operands, epilogue)?;
    let max = gpu.limits().max_compute_workgroups_per_dimension;
    if let Some(&too_many) = plan.groups.iter().find(|&&g| g > max) {
        return Err(Error::TooLarge {
            limit: "maxComputeWorkgroupsPerDimension",
            requested: too_many as u64,
            max: max as u64,
        });
    }
    let kernel = plan.kernel.clone().constant("TA", ta).constant("TB", tb);
    let params = views.params(d, plan.split, epilogue.dropout);
    Ok((kernel, params, plan))
}
