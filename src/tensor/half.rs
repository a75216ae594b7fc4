//! f16 tensors: frozen weights (a LoRA run's base), the inputs recomputed blocks keep for
//! backward under mixed precision (`recompute.rs`) and a GELU's output before an f16 product
//! (`ops::matmul::gelu_input`), held in half the memory. On the GPU two halves share a 32-bit
//! word, element 2i in the low half, and kernels pack and widen them with WGSL's core
//! `pack2x16float` and `unpack2x16float`, so any device holds them, with or without
//! shader-f16; on the CPU backend the values are f64s rounded to f16's. The f16 products read
//! them as they lie; the f32 ones as their second operand (shaders/matmul_b_f16.wgsl,
//! matmul_b4_f16.wgsl) and widened as their first; other ops after `to_f32`; nothing trains
//! them.

use super::{check_len, upload, DType, Device, Host, Storage, Tensor};
use crate::error::Result;
use crate::gpu::Binding;
use half::f16;

crate::kernel_params! {
    /// shaders/unpack_f16.wgsl: `n` elements.
    struct UnpackParams { n: u32 }
}

crate::kernel_params! {
    /// shaders/pack_f16.wgsl: `n` elements into `words` words (the padding's included).
    struct PackParams { n: u32, words: u32 }
}

/// `values` rounded to f16 (to nearest, ties to even) and packed two to a word, little-endian,
/// padded with zeros to whole groups of 4 (`DType::bytes`).
fn packed(values: impl ExactSizeIterator<Item = f32>) -> Vec<u8> {
    let n = values.len();
    let mut bytes: Vec<u8> = values
        .flat_map(|v| f16::from_f32(v).to_bits().to_le_bytes())
        .collect();
    bytes.resize(DType::F16.bytes(n) as usize, 0);
    bytes
}

/// The first `n` halves of `bytes` (as `packed` lays them out), in f64.
pub(super) fn unpacked(bytes: &[u8], n: usize) -> Vec<f64> {
    bytes
        .chunks_exact(2)
        .take(n)
        .map(|h| f16::from_bits(u16::from_le_bytes([h[0], h[1]])).to_f64())
        .collect()
}

/// `v` as the GPU gets it: the nearest f32's nearest f16, in f64. Rounding f64 to f16 at once
/// differs in a value in a few thousand (an f32 on an f16 tie), and the CPU backend must hold
/// what the GPU does.
fn rounded(v: f64) -> f64 {
    f16::from_f32(v as f32).to_f64()
}

impl Tensor {
    /// An f16 tensor of `data` rounded to f32 and then to f16 (on the CPU backend too), on
    /// `device`.
    pub fn from_f64_as_f16(data: Vec<f64>, shape: &[usize], device: &Device) -> Result<Tensor> {
        check_len("from_f64_as_f16", data.len(), shape)?;
        let storage = match device {
            Device::Cpu => Storage::Host(Host::F(data.into_iter().map(rounded).collect())),
            Device::Gpu(g) => upload(g, &packed(data.iter().map(|&v| v as f32)))?,
        };
        Ok(Tensor::from_storage(
            shape.to_vec(),
            DType::F16,
            device,
            storage,
        ))
    }

    /// An f16 tensor of zeros, cleared on the GPU (no upload): a frozen weight about to be
    /// loaded.
    pub fn zeros_f16(shape: &[usize], device: &Device) -> Result<Tensor> {
        let n = super::numel(shape);
        let storage = match device {
            Device::Cpu => Storage::Host(Host::F(vec![0.0; n])),
            Device::Gpu(g) => {
                let bytes = DType::F16.bytes(n);
                let buffer = g.alloc(bytes, true)?;
                g.clear(buffer.handle(), bytes);
                Storage::Gpu(buffer)
            }
        };
        Ok(Tensor::from_storage(
            shape.to_vec(),
            DType::F16,
            device,
            storage,
        ))
    }

    /// This tensor's values in f32: an f16 tensor widened (a new tensor), any other as it is.
    pub fn to_f32(&self) -> Result<Tensor> {
        if self.dtype() != DType::F16 {
            return Ok(self.clone());
        }
        let storage = match self.device() {
            Device::Cpu => Storage::Host(Host::F(self.host_f64("to_f32")?)),
            Device::Gpu(gpu) => {
                let source = include_str!("../../shaders/unpack_f16.wgsl");
                let kernel = crate::gpu::Kernel::new("unpack_f16", source, "main");
                let n = self.numel();
                let params = UnpackParams { n: n as u32 };
                let groups = gpu.groups_elementwise(n);
                crate::ops::launch1(gpu, &kernel, &params, &[self], n, groups)?
            }
        };
        Ok(Tensor::from_storage(
            self.shape().to_vec(),
            DType::F32,
            self.device(),
            storage,
        ))
    }

    /// This tensor's values rounded to f16, a new tensor without history: an f32 tensor packed
    /// (on the CPU to the nearest half, on a GPU to one of the two nearest, as WGSL's
    /// `pack2x16float` allows; values past f16's range held at ±65,504, its largest), an f16
    /// one as it is, any other refused.
    pub fn to_f16(&self) -> Result<Tensor> {
        match self.dtype() {
            DType::F16 => return Ok(self.detach()),
            DType::F32 => {}
            other => {
                return Err(crate::Error::Invalid {
                    op: "to_f16",
                    why: format!("rounds f32 values to f16, not {}", other.name()),
                })
            }
        }
        let storage = match self.device() {
            Device::Cpu => {
                let values = self.host_f64("to_f16")?;
                let max = f16::MAX.to_f64();
                let held = |v: f64| rounded(v.clamp(-max, max));
                Storage::Host(Host::F(values.into_iter().map(held).collect()))
            }
            Device::Gpu(gpu) => {
                let source = include_str!("../../shaders/pack_f16.wgsl");
                let kernel = crate::gpu::Kernel::new("pack_f16", source, "main");
                let n = self.numel();
                let bytes = DType::F16.bytes(n);
                let params = PackParams {
                    n: n as u32,
                    words: (bytes / 4) as u32,
                };
                // Made to be kept (a recomputed block's input): in a buffer of its own size.
                let out = gpu.alloc_kept(bytes)?;
                let x = self.buffer("to_f16")?;
                let bindings = [Binding::read(&x), Binding::write(out.handle())];
                let groups = gpu.groups_elementwise(params.words as usize);
                gpu.dispatch(&kernel, &params, &bindings, groups)?;
                Storage::Gpu(out)
            }
        };
        Ok(Tensor::from_storage(
            self.shape().to_vec(),
            DType::F16,
            self.device(),
            storage,
        ))
    }

    /// `assign` for an f16 tensor: `values` rounded to f16 and written in place.
    pub(super) fn assign_halves(&self, values: &[f32]) -> Result<()> {
        check_len("assign", values.len(), self.shape())?;
        match self.device() {
            Device::Cpu => self.update_host("assign", |v| {
                v.iter_mut()
                    .zip(values)
                    .for_each(|(d, s)| *d = rounded(*s as f64))
            }),
            Device::Gpu(gpu) => {
                let buffer = self.buffer("assign")?;
                // Queue writes run before unsubmitted commands: send those first.
                gpu.flush();
                // Whole 4-byte words (what a queue write takes), not the padding to a group of
                // 4 halves: a view (a padded table's first rows) has elements after it.
                let mut bytes = packed(values.iter().copied());
                bytes.truncate(values.len().div_ceil(2) * 4);
                gpu.queue.write_buffer(&buffer, buffer.offset, &bytes);
                Ok(())
            }
        }
    }
}
