//! Moving a tensor's values: written in place from the host, copied from another tensor, read
//! back, or copied to another device.

use super::{check_len, DType, Device, Tensor};
use crate::error::{Error, Result};

impl Tensor {
    /// Overwrites this f32 tensor's values in place, keeping its identity (loading weights);
    /// an f16 tensor's are rounded to f16.
    pub fn assign(&self, values: &[f32]) -> Result<()> {
        if self.dtype() == DType::F16 {
            return self.assign_halves(values);
        }
        self.expect_dtype("assign", DType::F32)?;
        check_len("assign", values.len(), self.shape())?;
        match self.device() {
            Device::Cpu => self.update_host("assign", |v| {
                v.iter_mut().zip(values).for_each(|(d, s)| *d = *s as f64)
            }),
            Device::Gpu(gpu) => {
                let buffer = self.buffer("assign")?;
                // Queue writes run before unsubmitted commands: send those first.
                gpu.flush();
                gpu.queue
                    .write_buffer(&buffer, buffer.offset, bytemuck::cast_slice(values));
                Ok(())
            }
        }
    }

    /// Copies `src` (same shape) into this tensor's storage, in stream order on the GPU.
    pub fn copy_from(&self, src: &Tensor) -> Result<()> {
        if src.shape() != self.shape() || src.dtype() != self.dtype() {
            return Err(Error::Shape {
                op: "copy_from",
                a: self.shape().to_vec(),
                b: src.shape().to_vec(),
                why: "shapes must match".into(),
            });
        }
        self.same_device("copy_from", src)?;
        match self.device() {
            Device::Cpu => {
                let v = src.host_f64("copy_from")?;
                self.update_host("copy_from", |d| d.copy_from_slice(&v))
            }
            Device::Gpu(gpu) => {
                gpu.copy(
                    &src.buffer("copy_from")?,
                    &self.buffer("copy_from")?,
                    self.dtype().bytes(self.numel()),
                );
                Ok(())
            }
        }
    }

    async fn read_bytes(&self) -> Result<Vec<u8>> {
        let Device::Gpu(gpu) = self.device() else {
            unreachable!("read_bytes is only called on GPU tensors")
        };
        let buffer = self.buffer("read")?;
        gpu.read(&buffer, self.dtype().bytes(self.numel())).await
    }

    /// Reads an f32 tensor back (async: it waits for the GPU).
    pub async fn to_vec(&self) -> Result<Vec<f32>> {
        Ok(self
            .to_vec_f64()
            .await?
            .into_iter()
            .map(|v| v as f32)
            .collect())
    }

    /// Reads an f32 (or f16) tensor back in f64 (exact for CPU tensors).
    pub async fn to_vec_f64(&self) -> Result<Vec<f64>> {
        self.expect_float("to_vec")?;
        if let Device::Cpu = self.device() {
            return self.host_f64("to_vec");
        }
        let bytes = self.read_bytes().await?;
        if self.dtype() == DType::F16 {
            return Ok(super::half::unpacked(&bytes, self.numel()));
        }
        let floats: &[f32] = bytemuck::cast_slice(&bytes);
        Ok(floats[..self.numel()].iter().map(|&v| v as f64).collect())
    }

    /// Reads a u32 tensor back.
    pub async fn to_vec_u32(&self) -> Result<Vec<u32>> {
        self.expect_dtype("to_vec_u32", DType::U32)?;
        if let Device::Cpu = self.device() {
            return self.host_u32("to_vec_u32");
        }
        let bytes = self.read_bytes().await?;
        Ok(bytemuck::cast_slice::<u8, u32>(&bytes)[..self.numel()].to_vec())
    }

    /// A copy of this tensor on `device` (reads back when leaving the GPU).
    pub async fn to_device(&self, device: &Device) -> Result<Tensor> {
        match self.dtype() {
            DType::F32 => Tensor::from_f64(self.to_vec_f64().await?, self.shape(), device),
            DType::U32 => Tensor::from_u32(self.to_vec_u32().await?, self.shape(), device),
            DType::F16 => Tensor::from_f64_as_f16(self.to_vec_f64().await?, self.shape(), device),
        }
    }
}
