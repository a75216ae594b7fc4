use super::*;
use crate::gpu::MatrixUnits;

/// A GPU running 132 large tiles at once (one per unit of an H100) through naga.
pub(in crate::ops::matmul) const LARGE: Tuning = Tuning {
    compiler: Compiler::Naga,
    in_browser: false,
    emulated: false,
    workgroup_bytes: 48 << 10,
    tiles_at_once: Some(132),
    attention_block: None,
    f16_products: None,
};
/// A laptop's GPU of 24 units.
pub(in crate::ops::matmul) const SMALL: Tuning = Tuning {
    tiles_at_once: Some(24),
    ..LARGE
};
/// A GPU whose size was not measured.
pub(in crate::ops::matmul) const UNKNOWN: Tuning = Tuning {
    tiles_at_once: None,
    ..LARGE
};
/// The least capable device WebGPU allows: 16 KiB of workgroup memory.
pub(in crate::ops::matmul) const GUARANTEED: Tuning = Tuning {
    workgroup_bytes: 16 << 10,
    ..LARGE
};
/// A GPU with f16 matrix units, a run asking for them.
pub(in crate::ops::matmul) const MATRIX: Tuning = Tuning {
    f16_products: Some(F16Products::MatrixUnits(MatrixUnits::Cooperative)),
    ..LARGE
};
/// A GPU without them, a run asking for f16: its f16 arithmetic.
pub(in crate::ops::matmul) const ARITHMETIC: Tuning = Tuning {
    f16_products: Some(F16Products::Arithmetic),
    ..LARGE
};
/// The same with 32 KiB of workgroup memory: the shallow slices (variants.rs, native only).
#[cfg(not(target_arch = "wasm32"))]
pub(in crate::ops::matmul) const ARITHMETIC_32K: Tuning = Tuning {
    workgroup_bytes: 32 << 10,
    ..ARITHMETIC
};
/// The same with 32 KiB of workgroup memory (Chrome's): the shallow slices (variants.rs,
/// native only).
#[cfg(not(target_arch = "wasm32"))]
pub(in crate::ops::matmul) const MATRIX_32K: Tuning = Tuning {
    workgroup_bytes: 32 << 10,
    ..MATRIX
};
/// The same, its size unmeasured.
const UNKNOWN_MATRIX: Tuning = Tuning {
    tiles_at_once: None,
    ..MATRIX
};
/// lavapipe or SwiftShader.
pub(in crate::ops::matmul) const EMULATED: Tuning = Tuning {
    emulated: true,
    ..LARGE
};
/// lavapipe, a run asking for f16 (lavapipe offers shader-f16).
const EMULATED_F16: Tuning = Tuning {
    emulated: true,
    ..ARITHMETIC
};

/// The path and the K split of a dense m × k · k × n product (A transposed or not).
fn planned(tuning: Tuning, (m, k, n): (usize, usize, usize)) -> (Path, usize) {
    let d = Dims {
        m,
        n,
        k,
        batches: 1,
    };
    let needs = Needs {
        epilogue_splittable: true,
        vec4_buffers: true,
        ..Needs::default()
    };
    let plan = plan((d, Views::dense(d, (false, false), (0, 0))), needs, &tuning);
    let path = [
        Path::Registers,
        Path::SmallTiles,
        Path::LargeTiles,
        Path::MatrixUnits,
        Path::F16Arithmetic,
    ]
    .into_iter()
    .find(|p| p.family() == plan.kernel.family)
    .expect("a known family");
    (path, plan.split.parts)
}

#[test]
fn the_plan_follows_the_devices_tuning() {
    use Path::*;
    let tint = LARGE.with_compiler(Compiler::Tint);
    // (tuning, m × k × n, path, parts of K)
    let table = [
        // An mlp layer's 128 rows over 784 inputs: 2 small tiles, K split in 49 slices.
        (LARGE, (128, 784, 64), SmallTiles, 49),
        (UNKNOWN, (128, 784, 64), SmallTiles, 49),
        // On 24 units, for 48 workgroups: 17 chunks of 3 slices.
        (SMALL, (128, 784, 64), SmallTiles, 17),
        (EMULATED, (128, 784, 64), Registers, 1),
        // 4096³: enough large tiles everywhere they fit; small ones in 16 KiB.
        (LARGE, (4096, 4096, 4096), LargeTiles, 1),
        (SMALL, (4096, 4096, 4096), LargeTiles, 1),
        (GUARANTEED, (4096, 4096, 4096), SmallTiles, 1),
        (EMULATED, (4096, 4096, 4096), Registers, 1),
        // GPT-2's input gradients, 192 tiles: two rounds of 132, the second under half
        // full, balanced in two parts; four rounds of 24 or more, or an unmeasured GPU,
        // none.
        (LARGE, (4096, 3072, 768), LargeTiles, 2),
        (SMALL, (4096, 3072, 768), LargeTiles, 1),
        (UNKNOWN, (4096, 3072, 768), LargeTiles, 1),
        // 1024³, 64 large tiles: K split to fill two rounds of 132; of 24, three parts
        // balance the rounds; on an unmeasured GPU no split, on 64 × 64 tiles (256 of
        // them) instead.
        (LARGE, (1024, 1024, 1024), LargeTiles, 4),
        (SMALL, (1024, 1024, 1024), LargeTiles, 3),
        (UNKNOWN, (1024, 1024, 1024), SmallTiles, 1),
        // Tint's variants keep products of 64 rows or fewer on small tiles (a
        // convolution's) and split no large tiles to fill the GPU.
        (tint, (64, 288, 4096), SmallTiles, 1),
        (LARGE, (64, 288, 4096), SmallTiles, 1),
        (tint, (1024, 1024, 1024), SmallTiles, 1),
        (tint, (4096, 4096, 4096), LargeTiles, 1),
        // With f16 matrix units asked for, every product of 2^23 multiply-adds or more on
        // them, not in 16 KiB of workgroup memory; K split where the tiles fill at most a
        // quarter of the GPU, in at most 8 parts (GPT-2's output layer's input gradient:
        // 24 tiles), as far as chunks of 256 allow (one tile in 3); 96 tiles not at all.
        (MATRIX, (128, 784, 128), MatrixUnits, 3),
        (MATRIX, (512, 50304, 768), MatrixUnits, 8),
        (MATRIX, (2048, 3072, 768), MatrixUnits, 1),
        (UNKNOWN_MATRIX, (512, 50304, 768), MatrixUnits, 1),
        (MATRIX, (128, 784, 64), SmallTiles, 49),
        (MATRIX, (4096, 4096, 4096), MatrixUnits, 1),
        (
            Tuning {
                workgroup_bytes: 16 << 10,
                ..MATRIX
            },
            (4096, 4096, 4096),
            SmallTiles,
            1,
        ),
        // f16 without matrix units: the same choices on the f16 arithmetic, even on lavapipe
        // (which the tests run it on), whose smaller products keep the registers.
        (ARITHMETIC, (128, 784, 128), F16Arithmetic, 3),
        (ARITHMETIC, (4096, 4096, 4096), F16Arithmetic, 1),
        (ARITHMETIC, (128, 784, 64), SmallTiles, 49),
        (EMULATED_F16, (260, 136, 260), F16Arithmetic, 1),
        (EMULATED_F16, (128, 784, 64), Registers, 1),
    ];
    for (tuning, mkn, path, parts) in table {
        assert_eq!(planned(tuning, mkn), (path, parts), "{mkn:?} on {tuning:?}");
    }
}

#[test]
fn operands_that_do_not_bind_whole_vec4s_stay_on_small_tiles() {
    let d = Dims {
        m: 4096,
        n: 4096,
        k: 4096,
        batches: 1,
    };
    let needs = Needs {
        vec4_buffers: false,
        ..Needs::default()
    };
    let plan = plan((d, Views::dense(d, (false, false), (0, 0))), needs, &LARGE);
    assert_eq!(plan.kernel.family, Path::SmallTiles.family());
}

#[test]
fn the_matrix_units_take_operands_whatever_their_buffers_and_rows() {
    let d = Dims {
        m: 1001,
        n: 1000,
        k: 999,
        batches: 1,
    };
    let needs = Needs {
        a_transposed: true,
        vec4_buffers: false,
        ..Needs::default()
    };
    // A's stored rows 1,001 long: not in fours, its row sums after C.
    let views = Views {
        row_sums: Some(d.m * d.n),
        ..Views::dense(d, (true, false), (0, 0))
    };
    assert!(!views.a.in_fours());
    let taken = plan((d, views), needs, &MATRIX);
    assert!(taken.in_f16(), "{}", taken.kernel.label());
    let causal = Needs {
        causal: Causal::OutputLower,
        ..needs
    };
    let left = plan((d, views), causal, &MATRIX);
    assert!(!left.in_f16(), "{}", left.kernel.label());
}
