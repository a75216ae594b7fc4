//! Which variant each product shape runs on this device, where one was measured fastest: the
//! tile size and how many parts its K is cut into. The planner (src/ops/matmul/plan.rs) notes
//! the shapes it plans and follows what was chosen; the measurement (src/tune/products.rs)
//! times the shapes noted and chooses.

use super::choices::Choices;

/// A product as its variant's choice depends on it: `batches` products of [m, k] · [k, n],
/// which operands are read transposed, whether K may be split (C dense and alone, an epilogue
/// the summing pass knows), whether the operands bind whole vec4s (the large tiles need it) and
/// whether the run's products may take the f16 matrix units (`Gpu::set_precision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProductShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub batches: usize,
    pub a_transposed: bool,
    pub b_transposed: bool,
    pub splittable: bool,
    pub vec4: bool,
    pub f16: bool,
}

/// The side of a product's tiles (shaders/matmul_small.wgsl, matmul.wgsl), or the f16 matrix
/// units' 128 × 128 tiles (shaders/matmul_coop.wgsl, or its Chrome dialect).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tiles {
    Small,
    Large,
    Matrix,
}

/// A product's variant on the tiled kernels: its tiles, and the parts its K is cut into (1:
/// none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProductVariant {
    pub tiles: Tiles,
    pub parts: usize,
}

/// The variants chosen on one device, and the shapes planned without one since they were last
/// taken for measuring.
pub type ProductVariants = Choices<ProductShape, ProductVariant>;
