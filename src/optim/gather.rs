//! Gradients gathered into a flat buffer by one kernel (shaders/gather.wgsl) per seven of
//! them, instead of a buffer copy each: in the browser each copy is a call of its own and ends
//! the compute pass, so the mlp's step spent about a tenth of its CPU time on its six copies
//! (docs/BENCHMARKS.md, "The optimizer's gather").

use crate::error::Result;
use crate::gpu::{Binding, BufferRef, Gpu, Kernel};
use crate::tensor::Tensor;

/// Gradients one dispatch gathers: the kernel's storage bindings less the destination.
pub(super) const PER_DISPATCH: usize = 7;

crate::kernel_params! {
    /// shaders/gather.wgsl: per source, its length and its place in the destination (elements).
    struct GatherParams {
        lens: [[u32; 4]; 2],
        places: [[u32; 4]; 2],
    }
}

/// Copies each `(place, grad)` of `pieces` to `dst[place..place + grad.numel()]`, one dispatch
/// per `PER_DISPATCH` of them.
pub(super) fn gather(gpu: &Gpu, dst: &Tensor, pieces: &[(usize, &Tensor)]) -> Result<()> {
    let dst = dst.buffer("optimizer")?;
    let kernel = Kernel::new(
        "gather",
        include_str!("../../shaders/gather.wgsl"),
        "gather",
    );
    for chunk in pieces.chunks(PER_DISPATCH) {
        let sources: Vec<BufferRef> = chunk
            .iter()
            .map(|(_, g)| g.buffer("optimizer"))
            .collect::<Result<_>>()?;
        let mut params = GatherParams::default();
        for (s, (place, g)) in chunk.iter().enumerate() {
            params.lens[s / 4][s % 4] = g.numel() as u32;
            params.places[s / 4][s % 4] = *place as u32;
        }
        // Every binding must hold a buffer: the slots past the last source repeat it, with
        // length 0, so they copy nothing.
        let last = sources.len() - 1;
        let mut bindings = vec![Binding::write(&dst)];
        bindings.extend((0..PER_DISPATCH).map(|s| Binding::read(&sources[s.min(last)])));
        let longest = chunk.iter().map(|(_, g)| g.numel()).max().unwrap_or(0);
        let [x, y, _] = gpu.groups_elementwise(longest);
        gpu.dispatch(&kernel, &params, &bindings, [x, y, chunk.len() as u32])?;
    }
    Ok(())
}
