//! Async readback through pooled staging buffers: the only point where the CPU waits for the GPU.

use super::{BufferKind, BufferRef, Gpu};
use crate::error::Result;
use std::rc::Rc;

pub(super) async fn read(gpu: &Rc<Gpu>, buffer: &BufferRef, bytes: u64) -> Result<Vec<u8>> {
    let bytes = bytes.div_ceil(4) * 4;
    if bytes == 0 {
        return Ok(Vec::new());
    }
    let staging =
        gpu.pool
            .borrow_mut()
            .acquire(gpu, bytes, BufferKind::Readback, None, gpu.largest_buffer());
    gpu.copy(buffer, staging.handle(), bytes);
    gpu.flush();

    let data = map_and_copy(gpu, staging.buffer(), bytes).await;
    match &data {
        Ok(_) => staging.buffer().unmap(),
        // A buffer whose mapping failed or is still pending must not go back to the pool.
        Err(_) => staging.discard(),
    }
    let data = data?;
    // A kernel that failed validation leaves its output untouched: never return such data.
    gpu.check_errors()?;
    gpu.collect_profile().await?;
    Ok(data)
}

/// The first `bytes` of a mappable buffer, once the GPU is done writing it; the caller unmaps.
pub(super) async fn map_and_copy(gpu: &Gpu, buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
    let (sender, receiver) = futures_channel::oneshot::channel();
    buffer.map_async(wgpu::MapMode::Read, 0..bytes, move |result| {
        let _ = sender.send(result);
    });
    gpu.answer(receiver)
        .await?
        .map_err(|e| gpu.readback_failed(e))?;
    let view = buffer
        .get_mapped_range(0..bytes)
        .map_err(|e| gpu.readback_failed(e))?;
    Ok(view.to_vec())
}
