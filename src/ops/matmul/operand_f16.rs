//! The operands of a product on the matrix units, as their kernels read them: f16 copies
//! (shaders/matmul_operand_f16.wgsl), each stored row padded with zeros to a multiple of 8
//! halves, so that the kernels load packets of 4 or 8 halves (8 or 16 bytes) with one check a
//! packet (shaders/matmul_f16_tiles.wgsl). Half the bytes of f32 operands, and in packets of
//! 8 twice the values a load: matmul_4096 on an H200 took 1.02 ms natively against 1.81 with
//! the kernels reading f32 (docs/log/products.md). The copy is one pass over the operand,
//! which the product then reads once for every 128 rows or columns of the other.

use super::layout::{Dims, Layout};
use super::shared_copies::{self, CopiedRows};
use crate::error::Result;
use crate::gpu::{Gpu, Kernel};
use crate::ops::{launch, vec4_buffers};
use crate::tensor::{DType, Storage, Tensor};
use std::rc::Rc;

/// What the kernels' rows are padded to: the widest packet.
pub(super) const ROW_HALVES: usize = 8;

crate::kernel_params! {
    /// shaders/matmul_operand_f16.wgsl: the stored matrices and the copy's rows.
    struct OperandParams {
        rows: u32, cols: u32, heads: u32, offset: u32, batch: u32, head: u32, row: u32,
        padded: u32, eights: u32,
    }
}

/// One operand of a product: matrices of `rows` stored rows of `cols` values, lying in `x`
/// where `layout` says (matrix z at head z % heads of group z / heads).
#[derive(Clone, Copy)]
pub(super) struct Operand<'a> {
    pub(super) x: &'a Tensor,
    pub(super) layout: Layout,
    pub(super) rows: usize,
    pub(super) cols: usize,
}

/// The rows a copy of `operand`'s `matrices` holds, where they lie one after another (matrix
/// z at offset + z × rows × row): None where they do not, and no copy is shared.
fn contiguous_rows(operand: &Operand, matrices: usize, heads: usize) -> Option<CopiedRows> {
    let Operand {
        x,
        layout,
        rows,
        cols,
    } = *operand;
    let one_after_another = layout.head == rows * layout.row && layout.batch == heads * layout.head;
    (matrices == 1 || one_after_another).then_some(CopiedRows {
        storage: x.storage_id(),
        offset: layout.offset,
        row: layout.row,
        cols,
        rows: matrices * rows,
    })
}

/// `operand`'s f16 copy for `d` (its batches in groups of `heads`) and where its matrices lie
/// in it: one after another, rows of a multiple of ROW_HALVES; a single matrix where the
/// operand broadcasts one to every batch. In a `sharing` scope, a copy of the same rows made
/// before serves.
pub(super) fn f16_copy(
    gpu: &Rc<Gpu>,
    operand: Operand,
    d: Dims,
    heads: usize,
) -> Result<(Tensor, Layout)> {
    if read_as_it_is(&operand) {
        return Ok((operand.x.clone(), operand.layout));
    }
    let broadcast = operand.layout.batch == 0 && operand.layout.head == 0;
    let matrices = if broadcast { 1 } else { d.batches };
    let padded = operand.cols.next_multiple_of(ROW_HALVES);
    let stride = if broadcast { 0 } else { operand.rows * padded };
    let layout = Layout::dense(padded, stride, heads);
    let rows = contiguous_rows(&operand, matrices, heads);
    if let Some(copy) = rows.and_then(shared_copies::known) {
        return Ok((copy, layout));
    }
    let copy = new_copy(gpu, &operand, (matrices, heads), Applied::Copied)?;
    if let Some(rows) = rows {
        shared_copies::keep(rows, &copy, operand.x);
    }
    Ok((copy, layout))
}

/// Whether the kernels can read `operand` where it lies: f16 already (a frozen weight), its
/// rows and matrices starting at whole packets of 8 halves and its rows whole packets long.
fn read_as_it_is(operand: &Operand) -> bool {
    operand.x.dtype() == DType::F16
        && operand.layout.in_multiples_of(ROW_HALVES)
        && operand.cols.is_multiple_of(ROW_HALVES)
}

/// Whether the copy reads `x` as vec4s: f32 values whose rows and matrices start at multiples
/// of 4, in a buffer of whole vec4s. An invocation's 8 values are then two 16-byte loads
/// instead of 8 of 4 bytes: nanochar's copies took 1.45 ms a step so against 1.65 on an H200
/// (profile, one call: docs/log/products.md).
fn in_vec4s(x: &Tensor, layout: Layout) -> Result<bool> {
    Ok(x.dtype() == DType::F32 && layout.in_fours() && vec4_buffers(&[x], "matmul")?)
}

/// What a copy makes of each value (shaders/matmul_operand_f16.wgsl's APPLY slot).
#[derive(Clone, Copy)]
enum Applied {
    Copied,
    Gelu,
}

impl Applied {
    fn slot(self) -> &'static str {
        match self {
            Applied::Copied => "copied",
            Applied::Gelu => "gelu",
        }
    }
}

/// GELU of `x` (f32, dense, its rows a multiple of 8 long) as an f16 tensor of its shape, in
/// the layout the matrix units' kernels read as it is (`read_as_it_is`): the input of a
/// product after a GELU (src/ops/linear.rs), made in one pass instead of GELU's f32 output and
/// then its copy, and held for backward in half the memory. Values past f16's range become
/// infinities, as in every copy.
pub(crate) fn gelu_f16(gpu: &Rc<Gpu>, x: &Tensor) -> Result<Tensor> {
    let cols = x.shape()[x.rank() - 1];
    if !cols.is_multiple_of(ROW_HALVES) {
        return Err(crate::Error::Invalid {
            op: "gelu_f16",
            why: format!("rows of {cols} values are not whole packets of {ROW_HALVES}"),
        });
    }
    let rows = x.numel() / cols.max(1);
    let operand = Operand {
        x,
        layout: Layout::dense(cols, 0, 1),
        rows,
        cols,
    };
    let copy = new_copy(gpu, &operand, (1, 1), Applied::Gelu)?;
    copy.reshape(x.shape())
}

/// The copy itself: `matrices` of `operand`'s (its batches in groups of `heads`), each value
/// as `applied` says.
fn new_copy(
    gpu: &Rc<Gpu>,
    operand: &Operand,
    (matrices, heads): (usize, usize),
    applied: Applied,
) -> Result<Tensor> {
    let Operand {
        x,
        layout,
        rows,
        cols,
    } = *operand;
    let padded = cols.next_multiple_of(ROW_HALVES);
    let halves = matrices * rows * padded;
    let params = OperandParams {
        rows: rows as u32,
        cols: cols as u32,
        heads: heads as u32,
        offset: layout.offset as u32,
        batch: layout.batch as u32,
        head: layout.head as u32,
        row: layout.row as u32,
        padded: padded as u32,
        eights: (halves / 8) as u32,
    };
    let source = include_str!("../../../shaders/matmul_operand_f16.wgsl");
    let kernel = Kernel::new("matmul_operand_f16", source, "main").slot("APPLY", applied.slot());
    let kernel = match in_vec4s(x, layout)? {
        true => kernel.slot("SOURCE", "vec4s"),
        false => kernel
            .slot("SOURCE", "values")
            .constant("SOURCE_F16", x.dtype() == DType::F16),
    };
    let groups = gpu.groups_elementwise(halves / 8);
    let [copy] = launch(gpu, &kernel, &params, &[x], [halves / 2], groups)?;
    Ok(Tensor::from_storage(
        vec![matrices, rows, padded],
        DType::F16,
        x.device(),
        Storage::Gpu(copy),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Device;
    use half::f16;

    /// The GPU the tests run on (lavapipe in CI), and it as a device.
    #[cfg(not(target_arch = "wasm32"))]
    fn lavapipe() -> (Rc<Gpu>, Device) {
        let gpu = pollster::block_on(Gpu::new()).expect("a GPU adapter (lavapipe)");
        (gpu.clone(), Device::Gpu(gpu))
    }

    /// f32 values that round every way: ties to even both ways, past f16's range, its
    /// largest, subnormals, below its least, zeros and infinities, and plain values.
    fn awkward() -> Vec<f64> {
        let tie = |bits: u32| f32::from_bits(bits) as f64;
        let mut v = vec![
            1.0 + 2f64.powi(-11),       // a tie between 1 and the next half: to 1
            1.0 + 3.0 * 2f64.powi(-11), // a tie: up to even
            tie(0x3f80_1001),           // just past a tie: up
            65504.0,
            65519.0,
            65520.0, // rounds past f16's largest: infinity
            -1e6,
            f64::INFINITY,
            f64::NEG_INFINITY,
            6e-8,
            3e-8, // just over half of the least subnormal: up to it
            2.9e-8,
            1e-10,
            -5e-6,
            6.1e-5,
            0.0,
            -0.0,
            std::f64::consts::PI,
        ];
        v.extend((0..30).map(|i| (i as f64 - 15.0) * 0.37));
        v
    }

    /// Rows of 7 (padded to 8) in 2 groups of 3 heads: at a stride of 9 after an offset of 3,
    /// heads 70 apart (read one value at a time), and at a stride of 12 after 4, heads 72
    /// apart (f32 read as vec4s): every cast (f32 and f16 sources) as the CPU rounds it, the
    /// padding zero.
    async fn copies_round_as_the_cpu_does(gpu: &Rc<Gpu>, device: &Device) {
        let (rows, cols, heads, batches) = (5, 7, 3, 6);
        let d = Dims {
            m: rows,
            n: 1,
            k: cols,
            batches,
        };
        for (offset, row, head) in [(3, 9, 70), (4, 12, 72)] {
            let layout = Layout {
                offset,
                batch: 3 * head,
                head,
                row,
            };
            // Whole vec4s: the last matrix's rows are followed by enough to round up to 4.
            let len =
                (layout.start(batches - 1, heads) + (rows - 1) * row + cols).next_multiple_of(4);
            let values: Vec<f64> = awkward().into_iter().cycle().take(len).collect();
            for source_f16 in [false, true] {
                let x = match source_f16 {
                    true => Tensor::from_f64_as_f16(values.clone(), &[len], device).unwrap(),
                    false => Tensor::from_f64(values.clone(), &[len], device).unwrap(),
                };
                let vec4s = !source_f16 && row == 12;
                assert_eq!(in_vec4s(&x, layout).unwrap(), vec4s);
                let operand = Operand {
                    x: &x,
                    layout,
                    rows,
                    cols,
                };
                let (copy, copied) = f16_copy(gpu, operand, d, heads).unwrap();
                assert_eq!(copied, Layout::dense(8, rows * 8, heads));
                let got = copy.to_vec_f64().await.unwrap();
                for z in 0..batches {
                    for r in 0..rows {
                        for c in 0..8 {
                            let want = match c < cols {
                                true => {
                                    let v = values[layout.start(z, heads) + r * row + c];
                                    f16::from_f32(v as f32).to_f64()
                                }
                                false => 0.0,
                            };
                            let at = copied.start(z, heads) + r * 8 + c;
                            let what = format!("vec4s {vec4s}, f16 source {source_f16}");
                            assert_eq!(got[at], want, "{what}: [{z}, {r}, {c}]");
                        }
                    }
                }
            }
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn copies_round_as_the_cpu_does_and_pad_their_rows_with_zeros() {
        let (gpu, device) = lavapipe();
        pollster::block_on(copies_round_as_the_cpu_does(&gpu, &device));
    }

    /// The same through the browser's own WGSL compiler (`wasm-pack test`: SwiftShader in
    /// Chrome), which checks more than naga: the copy needs no f16 feature, so it runs there
    /// though the matrix units do not.
    #[cfg(target_arch = "wasm32")]
    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn copies_round_as_the_cpu_does_in_the_browser() {
        let gpu = Gpu::new().await.expect("a WebGPU adapter");
        copies_round_as_the_cpu_does(&gpu, &Device::Gpu(gpu.clone())).await;
    }

    /// An f16 operand of whole packets is read where it lies; one of rows 4 halves long is
    /// copied.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn an_f16_operand_of_whole_packets_is_not_copied() {
        let (gpu, device) = lavapipe();
        let values: Vec<f64> = (0..48).map(f64::from).collect();
        let x = Tensor::from_f64_as_f16(values, &[48], &device).unwrap();
        let copies = || gpu.dispatches_of("matmul_operand_f16");
        let before = copies();
        for (cols, copied) in [(8, false), (4, true)] {
            let operand = Operand {
                x: &x,
                layout: Layout::dense(cols, 0, 1),
                rows: 48 / cols,
                cols,
            };
            let d = Dims {
                m: 48 / cols,
                n: 1,
                k: cols,
                batches: 1,
            };
            let (read, layout) = f16_copy(&gpu, operand, d, 1).unwrap();
            assert_eq!(
                read.storage_id() != x.storage_id(),
                copied,
                "rows of {cols}"
            );
            assert_eq!(layout, Layout::dense(8, 0, 1));
        }
        assert_eq!(copies() - before, 1);
    }

    /// An operand broadcast to every batch is copied once.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn a_broadcast_operand_is_copied_once() {
        let (gpu, device) = lavapipe();
        let x = Tensor::from_f64((0..12).map(f64::from).collect(), &[12], &device).unwrap();
        let operand = Operand {
            x: &x,
            layout: Layout::dense(4, 0, 1),
            rows: 3,
            cols: 4,
        };
        let d = Dims {
            m: 3,
            n: 5,
            k: 4,
            batches: 4,
        };
        let (copy, copied) = f16_copy(&gpu, operand, d, 1).unwrap();
        assert_eq!(
            (copy.shape(), copied),
            (&[1, 3, 8][..], Layout::dense(8, 0, 1))
        );
        let got = pollster::block_on(copy.to_vec_f64()).unwrap();
        let want: Vec<f64> = (0..3)
            .flat_map(|r| (0..8).map(move |c| if c < 4 { (r * 4 + c) as f64 } else { 0.0 }))
            .collect();
        assert_eq!(got, want);
    }

    /// In a scope, the same rows asked for as one matrix and then as two are copied once, the
    /// copy laid out for each; outside one, each request copies.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn within_a_sharing_scope_the_same_rows_are_copied_once() {
        let (gpu, device) = lavapipe();
        let x = Tensor::from_f64((0..48).map(f64::from).collect(), &[8, 6], &device).unwrap();
        let whole = Operand {
            x: &x,
            layout: Layout::dense(6, 0, 1),
            rows: 8,
            cols: 6,
        };
        let halves = Operand {
            layout: Layout::dense(6, 4 * 6, 1),
            rows: 4,
            ..whole
        };
        let dims = |m, batches| Dims {
            m,
            n: 1,
            k: 6,
            batches,
        };
        let copies = || gpu.dispatches_of("matmul_operand_f16");
        let before = copies();
        let ((first, second), made) = shared_copies::sharing(&[], || {
            let first = f16_copy(&gpu, whole, dims(8, 1), 1).unwrap();
            (first, f16_copy(&gpu, halves, dims(4, 2), 1).unwrap())
        });
        assert_eq!((copies() - before, made.len()), (1, 1));
        assert_eq!(first.0.storage_id(), second.0.storage_id());
        assert_eq!(second.1, Layout::dense(8, 4 * 8, 1));
        // A scope given the copies made shares them; none shares outside one.
        let (again, _) =
            shared_copies::sharing(&made, || f16_copy(&gpu, halves, dims(4, 2), 1).unwrap());
        assert_eq!(
            (copies() - before, again.0.storage_id()),
            (1, first.0.storage_id())
        );
        f16_copy(&gpu, whole, dims(8, 1), 1).unwrap();
        assert_eq!(copies() - before, 2);
    }
}
