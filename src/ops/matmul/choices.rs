//! The variants a product may run as on a device, among which the measurement
//! (src/tune/products.rs) picks the fastest on the user's GPU: 64 × 64 or 128 × 128 tiles, K
//! whole or split as split.rs's rules would split it, the large tiles' K in two to four parts,
//! or, in a run that asked for f16, the matrix units (so that f16 runs where it measured
//! faster). The planner's own choice (plan.rs) comes first; it is what runs until the shape is
//! measured, and what stays where the measurement is off.

use super::epilogue::Causal;
use super::layout::{Dims, Views};
use super::plan::{f16_kernel_for, plan, Needs, BIG_TILE_WORKGROUP_BYTES};
use super::split::{self, Split};
use crate::gpu::{ProductShape, ProductVariant, Tiles, Tuning};

/// Products of fewer multiply-adds than this are not timed: 8 M take under 20 µs even at a
/// laptop's 1 TFLOPS, about what the dispatch of a second pass costs, so their variants differ
/// by little more than their dispatches, and the planner keeps them to one where it can. The
/// spiral's mlp had 17 such shapes, whose timing held Chrome's first steps for 2.5 s.
const LEAST_TIMED_WORK: usize = 1 << 23;

/// The shape a product's variant is chosen for; None where none is measured: a causal
/// product (attention's scores), whose skipped tiles a dense timing would not skip, and a
/// small one (LEAST_TIMED_WORK).
pub(super) fn shape_of(
    d: Dims,
    views: &Views,
    needs: Needs,
    (b_transposed, tuning): (bool, &Tuning),
) -> Option<ProductShape> {
    if needs.causal != Causal::No || d.multiply_adds() < LEAST_TIMED_WORK {
        return None;
    }
    Some(ProductShape {
        m: d.m,
        n: d.n,
        k: d.k,
        batches: d.batches,
        a_transposed: needs.a_transposed,
        b_transposed,
        splittable: views.splittable(d) && needs.epilogue_splittable,
        vec4: needs.vec4_buffers,
        f16: f16_kernel_for(d, needs, tuning).is_some(),
    })
}

/// The sizes and the needs of a product of `shape`, laid out densely (as it is timed).
pub(super) fn dense(shape: ProductShape) -> (Dims, Views, Needs) {
    let d = Dims {
        m: shape.m,
        n: shape.n,
        k: shape.k,
        batches: shape.batches,
    };
    let strides = (d.m * d.k, d.k * d.n);
    let views = Views::dense(d, (shape.a_transposed, shape.b_transposed), strides);
    let needs = Needs {
        a_transposed: shape.a_transposed,
        causal: Causal::No,
        epilogue_splittable: shape.splittable,
        vec4_buffers: shape.vec4,
    };
    (d, views, needs)
}

/// The variants a product of `shape` may run as under `tuning`, the planner's own first; none
/// on an emulated GPU, whose kernels are not timed (`allowed`): its registers kernel has no
/// variants, and f16 asked for there runs on the f16 arithmetic as planned.
pub fn candidates(shape: ProductShape, tuning: &Tuning) -> Vec<ProductVariant> {
    if tuning.emulated {
        return Vec::new();
    }
    let (d, views, needs) = dense(shape);
    // The matrix units only for a shape that may take them (its own layout, not the dense one,
    // decided that when it was noted).
    let tuning = &Tuning {
        f16_products: tuning.f16_products.filter(|_| shape.f16),
        ..*tuning
    };
    let Some(planned) = plan((d, views), needs, tuning).variant() else {
        return Vec::new();
    };
    let small = |parts| ProductVariant {
        tiles: Tiles::Small,
        parts,
    };
    let large = |parts| ProductVariant {
        tiles: Tiles::Large,
        parts,
    };
    let mut all = vec![planned];
    if f16_kernel_for(d, needs, tuning).is_some() {
        let matrix = |parts| ProductVariant {
            tiles: Tiles::Matrix,
            parts,
        };
        all.push(matrix(1));
        if shape.splittable {
            all.push(matrix(
                Split::of_matrix_units(d, tuning.tiles_at_once).parts,
            ));
        }
    }
    all.push(small(1));
    if shape.splittable {
        all.push(small(
            Split::of(d, split::target_groups(tuning.tiles_at_once)).parts,
        ));
    }
    if tuning.workgroup_bytes >= BIG_TILE_WORKGROUP_BYTES && shape.vec4 {
        all.push(large(1));
        if shape.splittable {
            all.push(large(Split::of_big(d, tuning.tiles_at_once).parts));
            let tiles = d.large_tiles();
            let balancing = split::balancing_parts_to_try(d.k, tiles, tuning.tiles_at_once);
            all.extend(balancing.map(large));
        }
    }
    let mut unique = Vec::with_capacity(all.len());
    for variant in all {
        if !unique.contains(&variant) {
            unique.push(variant);
        }
    }
    unique
}

/// Whether `variant` may run a product of `shape` under `tuning`: tiled kernels (not the
/// emulated GPUs' one), large tiles only with their workgroup memory and vec4 bindings, the
/// matrix units only in a run that asked for them (the planner checks the rest of what they
/// need against the product's own layout), K in parts only where it may split. Cheaper than
/// `candidates`, for every product planned.
pub(super) fn allowed(shape: ProductShape, variant: ProductVariant, tuning: &Tuning) -> bool {
    let tiles = match variant.tiles {
        Tiles::Small => true,
        Tiles::Large => tuning.workgroup_bytes >= BIG_TILE_WORKGROUP_BYTES && shape.vec4,
        Tiles::Matrix => tuning.f16_products.is_some() && shape.f16,
    };
    !tuning.emulated && tiles && (variant.parts == 1 || shape.splittable) && variant.parts >= 1
}

#[cfg(test)]
mod tests {
    use super::super::plan::tests::{EMULATED, GUARANTEED, LARGE, MATRIX};
    use super::*;

    fn shape(m: usize, n: usize, k: usize, splittable: bool) -> ProductShape {
        ProductShape {
            m,
            n,
            k,
            batches: 1,
            a_transposed: false,
            b_transposed: false,
            splittable,
            vec4: true,
            f16: false,
        }
    }

    fn v(tiles: Tiles, parts: usize) -> ProductVariant {
        ProductVariant { tiles, parts }
    }

    #[test]
    fn the_planners_choice_comes_first_among_the_valid_variants() {
        use Tiles::*;
        // 1024³ on 132 units: the planner cuts the large tiles' K in four; the small tiles whole
        // (256 of them need no split), the large tiles whole, in two or three.
        assert_eq!(
            candidates(shape(1024, 1024, 1024, true), &LARGE),
            [
                v(Large, 4),
                v(Small, 1),
                v(Large, 1),
                v(Large, 2),
                v(Large, 3)
            ]
        );
        // Not splittable (a GELU in the epilogue): only whole K.
        assert_eq!(
            candidates(shape(1024, 1024, 1024, false), &LARGE),
            [v(Small, 1), v(Large, 1)]
        );
        // 16 KiB of workgroup memory: no large tiles.
        assert_eq!(
            candidates(shape(128, 64, 784, true), &GUARANTEED),
            [v(Small, 49), v(Small, 1)]
        );
        // The emulated GPUs' kernel has no variants, nor has f16 asked for there.
        assert!(candidates(shape(1024, 1024, 1024, true), &EMULATED).is_empty());
        let emulated_f16 = Tuning {
            f16_products: MATRIX.f16_products,
            ..EMULATED
        };
        let f16_shape = ProductShape {
            f16: true,
            ..shape(1024, 1024, 1024, true)
        };
        assert!(candidates(f16_shape, &emulated_f16).is_empty());
        // A run in f16: the matrix units first (the planner's), then the f32 variants; a
        // shape noted in an f32 run, or a run in f32, may not take them.
        let f16 = ProductShape {
            f16: true,
            ..shape(1024, 1024, 1024, false)
        };
        assert_eq!(
            candidates(f16, &MATRIX),
            [v(Matrix, 1), v(Small, 1), v(Large, 1)]
        );
        let f32 = shape(1024, 1024, 1024, false);
        assert_eq!(candidates(f32, &MATRIX), [v(Small, 1), v(Large, 1)]);
        // GPT-2's chunk of logits, 512 × 50,304 over 768: 1,572 tiles, twelve rounds of 132;
        // K in parts would only hold their partial products (parts × 103 MB) while timed.
        assert_eq!(
            candidates(shape(512, 50304, 768, true), &LARGE),
            [v(Large, 1), v(Small, 1)]
        );
        assert!(allowed(f16, v(Matrix, 1), &MATRIX));
        assert!(!allowed(f32, v(Matrix, 1), &MATRIX));
        assert!(!allowed(f16, v(Matrix, 1), &LARGE));
    }

    #[test]
    fn every_candidate_is_allowed_and_what_cannot_run_is_not() {
        for tuning in [LARGE, GUARANTEED, EMULATED] {
            for splittable in [true, false] {
                let s = shape(1024, 1024, 1024, splittable);
                for v in candidates(s, &tuning) {
                    assert!(allowed(s, v, &tuning), "{v:?} on {tuning:?}");
                }
            }
        }
        let whole = shape(1024, 1024, 1024, false);
        assert!(!allowed(whole, v(Tiles::Small, 2), &LARGE));
        assert!(!allowed(whole, v(Tiles::Large, 1), &GUARANTEED));
        assert!(!allowed(whole, v(Tiles::Small, 1), &EMULATED));
    }

    #[test]
    fn causal_and_small_products_are_not_measured() {
        let dims = |batches| Dims {
            m: 256,
            n: 256,
            k: 64,
            batches,
        };
        let (d, small) = (dims(2), dims(1));
        let views = Views::dense(d, (false, false), (256 * 64, 64 * 256));
        let causal = Needs {
            causal: Causal::OutputLower,
            ..Needs::default()
        };
        assert_eq!(shape_of(d, &views, causal, (false, &LARGE)), None);
        let plain = Needs::default();
        assert!(shape_of(d, &views, plain, (false, &LARGE)).is_some());
        // 4 M multiply-adds.
        assert_eq!(shape_of(small, &views, plain, (false, &LARGE)), None);
    }
}
