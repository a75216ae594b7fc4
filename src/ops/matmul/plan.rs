//! How a product runs on a GPU: which kernel computes it, with how many workgroups and how its
//! K is split (`plan`), decided from the product's sizes and layouts and the device's `Tuning`
//! alone, so that a table test checks the choice for any GPU without one.

use super::epilogue::Causal;
use super::layout::{Dims, Views};
use super::regs;
use super::split::{self, Split};
use crate::gpu::{Compiler, F16Products, Kernel, ProductVariant, Tiles, Tuning};

/// Below this many 128 × 128 tiles a GPU of 128 units or more would sit partly idle, so 64 × 64
/// tiles are used (unless K is split to fill it: `Split::of_big`, where the GPU's size is
/// known).
pub(crate) const BIG_TILES_FROM: usize = 128;
/// Workgroup memory of the 128 × 128 kernel (shaders/matmul.wgsl: two 8 KiB tiles and 4 KiB of
/// row sums), above the 16 KiB WebGPU guarantees: a device offering less gets 64 × 64 tiles
/// (8 KiB). Natively the pipeline cache checks every kernel's declaration against the device
/// (`check_workgroup_memory`), which keeps this figure honest.
pub(crate) const BIG_TILE_WORKGROUP_BYTES: u32 = 20 << 10;
/// How deep the f16 kernels' slices are and how wide the packets they load
/// (shaders/matmul_f16_deep.wgsl, matmul_f16_shallow.wgsl): the deep ones where the device
/// allows their workgroup memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MatrixSlices {
    /// 64 deep, packets of 8 halves: two f16 tiles of 18 KiB and 8 KiB for C on its way out.
    Deep,
    /// 32 deep, packets of 4 halves: two tiles of 10 KiB and 8 KiB for C (Chrome's 32 KiB).
    Shallow,
}

impl MatrixSlices {
    /// The deepest slices `workgroup_bytes` of workgroup memory hold, if any.
    fn within(workgroup_bytes: u32) -> Option<MatrixSlices> {
        [MatrixSlices::Deep, MatrixSlices::Shallow]
            .into_iter()
            .find(|s| s.workgroup_bytes() <= workgroup_bytes)
    }

    fn workgroup_bytes(self) -> u32 {
        match self {
            MatrixSlices::Deep => 45056,
            MatrixSlices::Shallow => 28672,
        }
    }

    /// The kernels' SLICES slot: the include that says so.
    fn slot(self) -> &'static str {
        match self {
            MatrixSlices::Deep => "deep",
            MatrixSlices::Shallow => "shallow",
        }
    }
}
/// Lanes of the emulated GPUs' kernel down C's rows: a workgroup's lanes take this many times
/// a lane's rows (shaders/matmul_regs.wgsl).
const REGS_LANES: usize = 8;
/// The side of the small and the large tiles (shaders/matmul_small.wgsl, matmul.wgsl).
const SMALL_SIDE: usize = 64;
const LARGE_SIDE: usize = 128;
/// The large-tile product's choices that depend on the compiler the kernels go through
/// (`Tuning::compiler`): the two differ in what runs fast on the same GPU. Tint's were measured
/// in Chrome on an H100 and an H200, naga's natively (docs/BENCHMARKS.md); Firefox compiles
/// with naga too.
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
        let tint = tuning.compiler == Compiler::Tint;
        let small_side = if tint { SMALL_SIDE } else { 0 };
        BigTilePolicy {
            over_rows: small_side,
            over_cols: small_side,
            over_depth: small_side,
            with_k_split: !tint,
            transpose_in_registers: tint,
            prefetch_next_slice: !tint,
            branchless_when_a_transposed: tint,
        }
    }
}

/// The kernel a plan takes, which its dispatches are counted under (`Gpu::dispatches_of`, the
/// profile's labels): tests assert the path they cover with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// shaders/matmul_regs.wgsl, for emulated GPUs: outputs in registers, no barriers.
    Registers,
    /// shaders/matmul_small.wgsl: 64 × 64 tiles.
    SmallTiles,
    /// shaders/matmul.wgsl: 128 × 128 tiles.
    LargeTiles,
    /// shaders/matmul_coop.wgsl: 128 × 128 tiles on f16 matrix units (`Tuning::f16_products`),
    /// over f16 copies of the operands (operand_f16.rs).
    MatrixUnits,
    /// shaders/matmul_f16_alu.wgsl: the same on the f16 arithmetic of a GPU without them.
    F16Arithmetic,
}

impl Path {
    /// The kernel family the path's dispatches count under.
    pub fn family(self) -> &'static str {
        match self {
            Path::Registers => regs::FAMILY,
            Path::SmallTiles => "matmul_small",
            Path::LargeTiles => "matmul",
            Path::MatrixUnits => "matmul_coop",
            Path::F16Arithmetic => "matmul_f16_alu",
        }
    }

    /// The paths whose products round their operands to f16.
    pub const F16: [Path; 2] = [Path::MatrixUnits, Path::F16Arithmetic];

    /// The path of a product run in f16 on `products`.
    fn of_f16(products: F16Products) -> Path {
        match products {
            F16Products::MatrixUnits(_) => Path::MatrixUnits,
            F16Products::Arithmetic => Path::F16Arithmetic,
        }
    }
}

/// What the planner needs to know of a product besides its sizes and layouts.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Needs {
    pub(crate) a_transposed: bool,
    pub(crate) causal: Causal,
    /// Whether the split's sum pass can add the epilogue (it knows no GELU, no dropout and no
    /// bias by row).
    pub(crate) epilogue_splittable: bool,
    /// Whether the operands' buffers bind whole vec4s (`crate::ops::vec4_buffers`).
    pub(crate) vec4_buffers: bool,
}

/// How a product runs: its kernel (of its path's family), its workgroups, how K is split, and whether the
/// kernel's threads hand C's columns over in whole vec4s (the tiled kernels over rows a
/// multiple of 4 long), so that C can be stored a vec4 at a time.
pub(crate) struct Plan {
    pub(crate) kernel: Kernel,
    pub(crate) groups: [u32; 3],
    pub(crate) split: Split,
    pub(crate) whole_vec4s: bool,
}

impl Plan {
    /// Whether the plan runs in f16 (its operands are then f16 copies).
    pub(crate) fn in_f16(&self) -> bool {
        Path::F16.iter().any(|p| self.kernel.family == p.family())
    }

    /// The variant this plan runs, None on the emulated GPUs' kernel (which has none).
    pub(crate) fn variant(&self) -> Option<ProductVariant> {
        let tiles = match self.kernel.family {
            f if f == Path::SmallTiles.family() => Tiles::Small,
            f if f == Path::LargeTiles.family() => Tiles::Large,
            _ if self.in_f16() => Tiles::Matrix,
            _ => return None,
        };
        Some(ProductVariant {
            tiles,
            parts: self.split.parts,
        })
    }
}

/// Which kernel computes a product under `tuning`, and its workgroups: register blocking
/// without barriers on emulated GPUs; on real ones 128 × 128 tiles once there are enough of
/// them to fill a large GPU (or K split fills it, where the GPU's size is known), more rows,
/// columns and depth than the policy's least, operands read as whole vec4s and the workgroup
/// memory they need; else 64 × 64, with K split when there are few tiles (split.rs).
pub(crate) fn plan((d, views): (Dims, Views), needs: Needs, tuning: &Tuning) -> Plan {
    let whole = Split::whole(d.k);
    let splittable = views.splittable(d) && needs.epilogue_splittable;
    // Before the emulated GPUs' kernel: f16 asked for on lavapipe runs (and is tested) in f16.
    if let Some(products) = f16_kernel_for(d, needs, tuning) {
        let split = match splittable {
            true => Split::of_matrix_units(d, tuning.tiles_at_once),
            false => whole,
        };
        return f16_tiles((d, views), products, tuning, split);
    }
    if tuning.emulated {
        return registers(d, splittable);
    }
    let policy = BigTilePolicy::of(*tuning);
    let big_split = match splittable {
        true => Split::of_big(d, tuning.tiles_at_once),
        false => whole,
    };
    let big_tiles = d.large_tiles();
    let enough_tiles = big_tiles >= BIG_TILES_FROM;
    if tuning.workgroup_bytes >= BIG_TILE_WORKGROUP_BYTES
        && d.m > policy.over_rows
        && d.n > policy.over_cols
        && d.k > policy.over_depth
        && (enough_tiles || (policy.with_k_split && big_split.parts > 1))
        && needs.vec4_buffers
    {
        return large_tiles((d, views), big_split, needs, &policy);
    }
    let target = split::target_groups(tuning.tiles_at_once);
    let split = if splittable {
        Split::of(d, target)
    } else {
        whole
    };
    small_tiles((d, views), split, needs)
}

/// Products of fewer multiply-adds stay on the f32 kernels when a run asks for f16: they take
/// under 20 µs even at a laptop's 1 TFLOPS, about what a dispatch costs, so the matrix units
/// would save next to nothing and the rounding would cost precision for it (the product timer
/// leaves such products untimed for the same reason: choices.rs, LEAST_TIMED_WORK). A model
/// all of whose products are smaller then trains in f32, without a loss scale
/// (`Optimizer::for_device`).
const LEAST_MATRIX_WORK: usize = 1 << 23;

/// The f16 kernel a product runs on: the run's (`Tuning::f16_products`) where it asked for f16
/// and the product can take it: it is large enough (LEAST_MATRIX_WORK), the device allows the
/// kernel's workgroup memory, and it is not one of causal attention's (whose skipping the
/// kernels do not know: docs/log/products.md measured it on the matrix units, slower with its
/// copies). Its operands need not bind as vec4s, nor A's rows be in fours for its row sums: the
/// kernels read f16 copies in packets (operand_f16.rs) and sum the packets.
pub(super) fn f16_kernel_for(d: Dims, needs: Needs, tuning: &Tuning) -> Option<F16Products> {
    let takes = d.multiply_adds() >= LEAST_MATRIX_WORK
        && MatrixSlices::within(tuning.workgroup_bytes).is_some()
        && needs.causal == Causal::No;
    tuning.f16_products.filter(|_| takes)
}

/// The plan on an f16 kernel: 128 × 128 tiles, K split as `split` says.
fn f16_tiles(
    (d, views): (Dims, Views),
    products: F16Products,
    tuning: &Tuning,
    split: Split,
) -> Plan {
    let source = products.kernel_source();
    let slices = MatrixSlices::within(tuning.workgroup_bytes).expect("f16_kernel_for checked");
    let kernel = Kernel::new(Path::of_f16(products).family(), source, "main")
        .slot("SLICES", slices.slot())
        .constant("SPLIT", split.parts > 1)
        .constant("ROW_SUMS", views.row_sums.is_some());
    let [x, y, z] = tiles(d, LARGE_SIDE);
    Plan {
        kernel,
        groups: [x, y, z * split.parts as u32],
        split,
        whole_vec4s: d.n.is_multiple_of(4) && views.c.in_fours(),
    }
}

/// The plan of `variant` for a product, K cut into its parts (the measurement times each
/// variant so, src/tune/products.rs, and the planner follows the one chosen).
pub(crate) fn plan_variant(
    (d, views): (Dims, Views),
    needs: Needs,
    tuning: &Tuning,
    variant: ProductVariant,
) -> Plan {
    let split = Split::in_parts(d.k, variant.parts);
    match variant.tiles {
        Tiles::Small => small_tiles((d, views), split, needs),
        Tiles::Large => large_tiles((d, views), split, needs, &BigTilePolicy::of(*tuning)),
        // A shape measured dense may come with a layout the matrix units do not take.
        Tiles::Matrix => match f16_kernel_for(d, needs, tuning) {
            Some(products) => f16_tiles(
                (d, views),
                products,
                tuning,
                Split::in_matrix_parts(d.k, variant.parts),
            ),
            None => plan((d, views), needs, tuning),
        },
    }
}

/// The plan on 64 × 64 tiles (shaders/matmul_small.wgsl), K split as `split` says.
fn small_tiles((d, views): (Dims, Views), split: Split, needs: Needs) -> Plan {
    let [x, y, z] = tiles(d, SMALL_SIDE);
    let source = include_str!("../../../shaders/matmul_small.wgsl");
    Plan {
        kernel: Kernel::new(Path::SmallTiles.family(), source, "main")
            .constant("ROW_SUMS", views.row_sums.is_some())
            .constant("CAUSAL", needs.causal as u32),
        groups: [x, y, z * split.parts as u32],
        split,
        whole_vec4s: d.n % 4 == 0 && views.c.in_fours(),
    }
}

/// The most of K one workgroup of the emulated GPUs' kernel sums: llvmpipe ends a shader's
/// loop after 65,535 iterations (its compiler's bound, for loops in any nesting), which left
/// the rest of a longer K out of the sums. Past it K is split, where the product allows.
const REGS_K_AT_MOST: usize = 32_768;

/// The plan of the emulated GPUs' kernel, its registers sized to the product, K split in
/// parts of `REGS_K_AT_MOST` where longer and `splittable`.
fn registers(d: Dims, splittable: bool) -> Plan {
    let (rows, cols) = (regs::rows_per_lane(d.m), regs::cols_per_lane(d.n));
    let split = match splittable && d.k > REGS_K_AT_MOST {
        true => Split {
            k_chunk: REGS_K_AT_MOST,
            parts: d.k.div_ceil(REGS_K_AT_MOST),
        },
        false => Split::whole(d.k),
    };
    Plan {
        kernel: regs::kernel(rows, cols),
        groups: [
            d.m.div_ceil(REGS_LANES * rows) as u32,
            d.n.div_ceil(cols) as u32,
            (d.batches * split.parts) as u32,
        ],
        split,
        whole_vec4s: false,
    }
}

/// Workgroups of `side` × `side` tiles over C: [columns, rows, batches].
fn tiles(d: Dims, side: usize) -> [u32; 3] {
    [
        d.n.div_ceil(side) as u32,
        d.m.div_ceil(side) as u32,
        d.batches as u32,
    ]
}

/// The plan on the 128 × 128 kernel with the variants `tuning` picks, whatever its size: the
/// calibration times it so (calibrate.rs).
pub(super) fn large_tiles_on(
    (d, views): (Dims, Views),
    split: Split,
    needs: Needs,
    tuning: &Tuning,
) -> Plan {
    large_tiles((d, views), split, needs, &BigTilePolicy::of(*tuning))
}

/// The plan on the 128 × 128 kernel (shaders/matmul.wgsl), K split as `split` says, its
/// operands fetched as vec4s where their stored rows allow, skipping what `causal` says, and
/// with the variants `policy` picks for the device's compiler.
fn large_tiles(
    (d, views): (Dims, Views),
    split: Split,
    needs: Needs,
    policy: &BigTilePolicy,
) -> Plan {
    // An operand whose stored rows are a multiple of 4 long is fetched as vec4s, even when
    // the other is not (the output layer's gradients over a vocabulary of 50,257).
    let (a_rows_of_4, b_rows_of_4) = (views.a.in_fours(), views.b.in_fours());
    let source = include_str!("../../../shaders/matmul.wgsl");
    let kernel = Kernel::new(Path::LargeTiles.family(), source, "main")
        .constant("VEC4_A", a_rows_of_4)
        .constant("VEC4_B", b_rows_of_4)
        .constant("SPLIT", split.parts > 1)
        .constant("CAUSAL", needs.causal as u32)
        .constant("BLOCKS", policy.transpose_in_registers)
        .constant("PREFETCH", policy.prefetch_next_slice)
        .constant(
            "BRANCHLESS",
            policy.branchless_when_a_transposed && needs.a_transposed,
        )
        .constant("WIDE", d.n > LARGE_SIDE / 2)
        .constant("ROW_SUMS", views.row_sums.is_some());
    let [x, y, z] = tiles(d, LARGE_SIDE);
    Plan {
        kernel,
        groups: [x, y, z * split.parts as u32],
        split,
        whole_vec4s: d.n % 4 == 0 && views.c.in_fours(),
    }
}

#[cfg(test)]
pub(super) mod tests;
