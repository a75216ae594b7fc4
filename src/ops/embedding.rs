//! Embedding: gather rows of a weight matrix by u32 index; backward scatter-adds.

use super::{gpu_of, launch1, launch_into, row_windows};
use crate::autograd::{Backward, Inputs};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel};
use crate::tensor::{gpu_output, DType, Host, Storage, Tensor};
use std::rc::Rc;

/// Indices per chunk in the GPU backward, and the most chunks.
const CHUNK_INDICES: usize = 256;
const MAX_CHUNKS: usize = 64;
const CHUNKS_BYTES: usize = 64 << 20;

crate::kernel_params! {
    /// shaders/embedding.wgsl: `n` indices into a [vocab, dim] table, whose `rows` rows from
    /// `first` are bound.
    struct EmbeddingParams { n: u32, dim: u32, vocab: u32, first: u32, rows: u32 }
}

crate::kernel_params! {
    /// shaders/embedding_backward.wgsl: as the forward, the indices cut into `chunks` of
    /// `chunk`.
    struct EmbeddingBackwardParams { n: u32, dim: u32, vocab: u32, chunk: u32, chunks: u32 }
}

/// A table lookup, as recorded for backward; the indices get no gradient.
struct EmbeddingOp {
    weight: Tensor,
    indices: Tensor,
}

impl Backward for EmbeddingOp {
    fn inputs(&self) -> Inputs<'_> {
        smallvec::smallvec![&self.weight]
    }
    fn backward(&self, _out: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
        embedding_backward(&self.weight, &self.indices, g)
    }
}

/// How many chunks the backward cuts `n` indices into, for a table of `table` values. Real
/// GPUs have threads to spare: long index lists are cut into chunks summed in parallel, then
/// added up (emulated GPUs would only do the same work twice). The partial sums may take at
/// most CHUNKS_BYTES (a large vocabulary gets few chunks or one).
fn backward_chunks(gpu: &Gpu, n: usize, table: usize) -> usize {
    if gpu.is_cpu_emulated() {
        return 1;
    }
    let by_memory = CHUNKS_BYTES / (table * 4).max(1);
    (n / CHUNK_INDICES).clamp(1, MAX_CHUNKS.min(by_memory.max(1)))
}

/// dweight: the gradient rows summed into the rows their indices name.
fn embedding_backward(weight: &Tensor, indices: &Tensor, g: &Tensor) -> Result<Vec<Tensor>> {
    let (vocab, dim) = (weight.shape()[0], weight.shape()[1]);
    let n = indices.numel();
    let storage = match gpu_of(weight.device()) {
        None => {
            let (idx, gv) = (
                indices.host_u32("embedding backward")?,
                g.host_f64("embedding backward")?,
            );
            let mut dw = vec![0.0; vocab * dim];
            for (i, &row) in idx.iter().enumerate() {
                for d in 0..dim {
                    dw[row as usize * dim + d] += gv[i * dim + d];
                }
            }
            Storage::Host(Host::F(dw))
        }
        Some(gpu) => {
            let kernel = Kernel::new(
                "embedding_backward",
                include_str!("../../shaders/embedding_backward.wgsl"),
                "main",
            );
            let chunks = backward_chunks(gpu, n, vocab * dim);
            let chunk = n.div_ceil(chunks);
            let params = EmbeddingBackwardParams {
                n: n as u32,
                dim: dim as u32,
                vocab: vocab as u32,
                chunk: chunk as u32,
                chunks: chunks as u32,
            };
            let len = chunks * vocab * dim;
            // One workgroup per row of the table and chunk.
            let groups = gpu.groups_1d(chunks * vocab, 1);
            let parts = launch1(gpu, &kernel, &params, &[indices, g], len, groups)?;
            if chunks > 1 {
                let parts = Tensor::from_storage(
                    vec![chunks, vocab, dim],
                    DType::F32,
                    weight.device(),
                    parts,
                );
                return Ok(vec![parts.sum(0, false)?.detach()]);
            }
            parts
        }
    };
    Ok(vec![Tensor::from_storage(
        weight.shape().to_vec(),
        DType::F32,
        weight.device(),
        storage,
    )])
}

/// The rows of `table` [vocab, dim] that `indices` pick, on the GPU (shaders/embedding.wgsl):
/// a table larger than a binding a window of its rows at a time.
fn gpu_gather(gpu: &Rc<Gpu>, table: &Tensor, indices: &Tensor) -> Result<Storage> {
    let (vocab, dim, n) = (table.shape()[0], table.shape()[1], indices.numel());
    let kernel = Kernel::new(
        "embedding",
        include_str!("../../shaders/embedding.wgsl"),
        "main",
    )
    .slot("TABLE", table.dtype().name());
    let groups = gpu.groups_elementwise(n * dim);
    let out = gpu_output(gpu, n * dim)?;
    let windows = row_windows(table).unwrap_or_else(|| vec![(0, table.clone())]);
    for (first, window) in &windows {
        let params = EmbeddingParams {
            n: n as u32,
            dim: dim as u32,
            vocab: vocab as u32,
            first: *first as u32,
            rows: window.shape()[0] as u32,
        };
        let inputs = [window, indices];
        let [] = launch_into(gpu, &kernel, &params, &inputs, &[&out], [], groups)?;
    }
    Ok(Storage::Gpu(out))
}

impl Tensor {
    /// Rows of this [vocab, dim] weight picked by `indices` (u32, any shape): the result has
    /// shape indices.shape + [dim]. On the GPU an index outside the vocabulary gives NaN; on
    /// the CPU it is an error.
    pub fn embedding(&self, indices: &Tensor) -> Result<Tensor> {
        let name = "embedding";
        self.expect_float(name)?;
        indices.expect_dtype(name, DType::U32)?;
        self.same_device(name, indices)?;
        if self.rank() != 2 {
            return Err(Error::Invalid {
                op: name,
                why: format!("the weight must be [vocab, dim], got {:?}", self.shape()),
            });
        }
        let (vocab, dim) = (self.shape()[0], self.shape()[1]);
        let storage = match gpu_of(self.device()) {
            None => {
                let (w, idx) = (self.host_f64(name)?, indices.host_u32(name)?);
                if let Some(bad) = idx.iter().find(|&&i| i as usize >= vocab) {
                    return Err(Error::Invalid {
                        op: name,
                        why: format!("index {bad} is outside the vocabulary of {vocab}"),
                    });
                }
                Storage::Host(Host::F(
                    idx.iter()
                        .flat_map(|&i| w[i as usize * dim..(i as usize + 1) * dim].to_vec())
                        .collect(),
                ))
            }
            Some(gpu) => gpu_gather(gpu, self, indices)?,
        };
        let mut shape = indices.shape().to_vec();
        shape.push(dim);
        let op = EmbeddingOp {
            weight: self.clone(),
            indices: indices.clone(),
        };
        Ok(Tensor::from_op(
            shape,
            DType::F32,
            self.device(),
            storage,
            op,
        ))
    }
}
