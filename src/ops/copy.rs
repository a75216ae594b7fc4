//! Strided copies: the one kernel (shaders/copy.wgsl) that every movement runs, with the
//! strides and offsets of a permute, slice, concat, expand, pad or gathering of heads. Where
//! the innermost axis runs in rows of 4 on both sides, it moves vec4s: a quarter of the
//! threads and of the index arithmetic, and whole 16-byte accesses.

use super::gpu_of;
use super::shape::{check_rank, pack, strided_offsets, Packed};
use crate::error::{Error, Result};
use crate::gpu::{Binding, BufferRef, Gpu, Kernel};
use crate::tensor::{gpu_output, gpu_table, numel, DType, Device, Host, Storage, Tensor};

/// One strided copy of the index space `shape` from `src` into `dst`.
pub(super) struct Copy<'a> {
    pub(super) src: &'a Tensor,
    pub(super) src_off: usize,
    pub(super) src_strides: Vec<usize>,
    pub(super) shape: Vec<usize>,
    pub(super) dst_off: usize,
    pub(super) dst_strides: Vec<usize>,
}

crate::kernel_params! {
    /// shaders/fill.wgsl: `n` elements set to `value`.
    struct FillParams { n: u32, value: f32 }
}

crate::kernel_params! {
    /// shaders/copy.wgsl: `n` elements of a strided view of `rank` dimensions.
    struct CopyParams {
        n: u32,
        rank: u32,
        src_off: u32,
        dst_off: u32,
        shape: Packed,
        ss: Packed,
        ds: Packed,
    }
}

/// A new f32 tensor of `shape` filled with `value`; on the GPU by a dispatch: no upload, so no
/// queue write, and the buffer may be one the batch still uses (see `Gpu::alloc`).
pub(crate) fn filled(device: &Device, shape: &[usize], value: f32) -> Result<Tensor> {
    let storage = copy_over(device, numel(shape), value, &[])?;
    Ok(Tensor::from_storage(
        shape.to_vec(),
        DType::F32,
        device,
        storage,
    ))
}

/// Runs the copies into a new f32 buffer of `len` elements that starts filled with zeros.
pub(super) fn copy_into(device: &Device, len: usize, copies: &[Copy]) -> Result<Storage> {
    copy_over(device, len, 0.0, copies)
}

/// Runs the copies into a new f32 buffer of `len` elements that starts filled with `fill`.
pub(super) fn copy_over(
    device: &Device,
    len: usize,
    fill: f32,
    copies: &[Copy],
) -> Result<Storage> {
    for c in copies {
        c.src.expect_dtype("copy", DType::F32)?;
        check_rank("copy", &c.shape)?;
    }
    let Some(gpu) = gpu_of(device) else {
        let mut out = vec![fill as f64; len];
        for c in copies {
            copy_on_host(c, &c.src.host_f64("copy")?, &mut out);
        }
        return Ok(Storage::Host(Host::F(out)));
    };
    // Zeros for a buffer larger than a binding (a frozen table about to be loaded): cleared,
    // which binds nothing.
    let bytes = len as u64 * 4;
    if copies.is_empty() && fill == 0.0 && bytes > gpu.limits().max_storage_buffer_binding_size {
        let out = gpu_table(gpu, len)?;
        gpu.clear(out.handle(), bytes);
        return Ok(Storage::Gpu(out));
    }
    let out = gpu_output(gpu, len)?;
    let covered: usize = copies.iter().map(|c| numel(&c.shape)).sum();
    if covered < len {
        let kernel = Kernel::new("fill", include_str!("../../shaders/fill.wgsl"), "main");
        let params = FillParams {
            n: len as u32,
            value: fill,
        };
        let bindings = [Binding::write(out.handle())];
        gpu.dispatch(&kernel, &params, &bindings, gpu.groups_elementwise(len))?;
    }
    for c in copies {
        if numel(&c.shape) > 0 {
            dispatch_copy(gpu, c, out.handle())?;
        }
    }
    Ok(Storage::Gpu(out))
}

/// One copy on the CPU backend, of `src` (the copy's source's values) into `out`.
fn copy_on_host(c: &Copy, src: &[f64], out: &mut [f64]) {
    let from = strided_offsets(&c.shape, &c.src_strides);
    let to = strided_offsets(&c.shape, &c.dst_strides);
    for (s, d) in from.iter().zip(&to) {
        out[c.dst_off + d] = src[c.src_off + s];
    }
}

/// One copy into `out`, as vec4s where `in_vec4s` allows.
fn dispatch_copy(gpu: &Gpu, c: &Copy, out: &BufferRef) -> Result<()> {
    let src = c.src.buffer("copy")?;
    let whole = |size: u64| size.is_multiple_of(16);
    let fours = whole(src.binding_size()) && whole(out.binding_size());
    let (params, elem) = match fours.then(|| in_vec4s(c)).flatten() {
        Some(params) => (params, "vec4<f32>"),
        None => (params_of(c), "f32"),
    };
    let kernel =
        Kernel::new("copy", include_str!("../../shaders/copy.wgsl"), "copy").slot("ELEM", elem);
    let bindings = [Binding::read(&src), Binding::write(out)];
    let groups = gpu.groups_elementwise(params.n as usize);
    gpu.dispatch(&kernel, &params, &bindings, groups)
}

fn params_of(c: &Copy) -> CopyParams {
    CopyParams {
        n: numel(&c.shape) as u32,
        rank: c.shape.len() as u32,
        src_off: c.src_off as u32,
        dst_off: c.dst_off as u32,
        shape: pack(&c.shape),
        ss: pack(&c.src_strides),
        ds: pack(&c.dst_strides),
    }
}

/// The copy in units of vec4s, when its innermost axis is contiguous on both sides and
/// everything else (its length, the other strides, the offsets) comes in fours.
fn in_vec4s(c: &Copy) -> Option<CopyParams> {
    let last = c.shape.len().checked_sub(1)?;
    let fours = |x: usize| x.is_multiple_of(4);
    let outer = |s: &[usize]| s[..last].iter().all(|&x| fours(x));
    let usable = fours(c.shape[last])
        && c.src_strides[last] == 1
        && c.dst_strides[last] == 1
        && outer(&c.src_strides)
        && outer(&c.dst_strides)
        && fours(c.src_off)
        && fours(c.dst_off);
    if !usable {
        return None;
    }
    let quarter = |s: &[usize]| -> Vec<usize> {
        let mut q: Vec<usize> = s.iter().map(|x| x / 4).collect();
        q[last] = 1;
        q
    };
    let mut shape = c.shape.clone();
    shape[last] /= 4;
    Some(params_of(&Copy {
        src: c.src,
        src_off: c.src_off / 4,
        src_strides: quarter(&c.src_strides),
        shape,
        dst_off: c.dst_off / 4,
        dst_strides: quarter(&c.dst_strides),
    }))
}

impl Tensor {
    /// Writes `src` over this tensor's elements from `start` along `axis` (every other
    /// dimension the same), in place and in stream order on the GPU: a sampler's key/value
    /// cache takes each new position so, its buffers the same from the first token to the
    /// last. Only for a tensor outside any graph (made under `no_grad`, needing no gradient):
    /// an op that kept it for its backward would read the new values.
    pub fn write_at(&self, axis: isize, start: usize, src: &Tensor) -> Result<()> {
        let a = super::shape::axis_index("write_at", axis, self.rank())?;
        src.expect_dtype("write_at", DType::F32)?;
        self.expect_dtype("write_at", DType::F32)?;
        self.same_device("write_at", src)?;
        let fits = src.rank() == self.rank()
            && (0..self.rank()).all(|d| d == a || src.shape()[d] == self.shape()[d])
            && start + src.shape()[a] <= self.shape()[a];
        if !fits {
            return Err(Error::Shape {
                op: "write_at",
                a: self.shape().to_vec(),
                b: src.shape().to_vec(),
                why: format!("it must fit from {start} along axis {a}"),
            });
        }
        if self.requires_grad() {
            return Err(Error::Invalid {
                op: "write_at",
                why: "writes only into a tensor needing no gradient".into(),
            });
        }
        let dst_strides = super::shape::strides(self.shape());
        let copy = Copy {
            src,
            src_off: 0,
            src_strides: super::shape::strides(src.shape()),
            shape: src.shape().to_vec(),
            dst_off: start * dst_strides[a],
            dst_strides,
        };
        check_rank("write_at", &copy.shape)?;
        if numel(&copy.shape) == 0 {
            return Ok(());
        }
        match gpu_of(self.device()) {
            Some(gpu) => dispatch_copy(gpu, &copy, &self.buffer("write_at")?),
            None => {
                let v = src.host_f64("write_at")?;
                self.update_host("write_at", |out| copy_on_host(&copy, &v, out))
            }
        }
    }
}
