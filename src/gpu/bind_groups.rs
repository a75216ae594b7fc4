//! Bind groups cached by (pipeline, buffers). A training step asks for the same pipelines with
//! the same pooled buffers every time, so after warm-up it creates none; creating one costs
//! more CPU than the rest of a dispatch, most of all in the browser.
//!
//! A cached group binds buffers, not tensors: when a buffer goes back to the pool and on to
//! another tensor, a dispatch for that tensor finds the group of that same buffer, which is
//! right. A buffer's id is never reused (see `BufferRef`), and the cache is emptied whenever
//! the pool destroys buffers it may bind, so a group never outlives a buffer it names.

use super::pipelines::Pipeline;
use super::Binding;
use rustc_hash::FxHashMap;

/// The most storage buffers one kernel binds (WebGPU's default maxStorageBuffersPerShaderStage).
pub(crate) const MAX_BINDINGS: usize = 8;
/// A cache this full is emptied: a workload that keeps changing its buffers gets no benefit, and
/// its groups should not pile up.
const MAX_GROUPS: usize = 16384;

/// The parameter arena every group binds first: one buffer, each dispatch's parameters at a
/// dynamic offset, `window` bytes of it visible to a kernel.
pub(crate) struct Arena {
    pub buffer: wgpu::Buffer,
    pub window: u64,
}

#[derive(Hash, PartialEq, Eq)]
struct Key {
    pipeline: u64,
    /// (buffer id, offset, size) in binding order; id 0 past the last binding (ids start
    /// at 1). The size too: a whole buffer and a part of it from offset 0 differ.
    buffers: [(u64, u64, u64); MAX_BINDINGS],
}

#[derive(Default)]
pub(crate) struct BindGroupCache {
    groups: FxHashMap<Key, wgpu::BindGroup>,
    /// Bind groups created so far (cache misses).
    pub created: u64,
}

impl BindGroupCache {
    /// The group binding `arena` (the parameters, at a dynamic offset) and `bindings` to
    /// `pipeline`, made on first use.
    pub fn get(
        &mut self,
        device: &wgpu::Device,
        pipeline: &Pipeline,
        arena: &Arena,
        bindings: &[Binding],
    ) -> &wgpu::BindGroup {
        assert!(
            bindings.len() <= MAX_BINDINGS,
            "a kernel binds at most {MAX_BINDINGS} buffers"
        );
        let mut key = Key {
            pipeline: pipeline.id,
            buffers: [(0, 0, 0); MAX_BINDINGS],
        };
        for (slot, b) in key.buffers.iter_mut().zip(bindings) {
            *slot = (b.buffer.id, b.buffer.offset, b.buffer.binding_size());
        }
        if self.groups.len() >= MAX_GROUPS && !self.groups.contains_key(&key) {
            self.groups.clear();
        }
        let created = &mut self.created;
        self.groups.entry(key).or_insert_with(|| {
            *created += 1;
            create(device, pipeline, arena, bindings)
        })
    }

    /// Forgets every group (the pool is about to destroy buffers they may name).
    pub fn clear(&mut self) {
        self.groups.clear();
    }
}

fn create(
    device: &wgpu::Device,
    pipeline: &Pipeline,
    arena: &Arena,
    bindings: &[Binding],
) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &arena.buffer,
            offset: 0,
            size: wgpu::BufferSize::new(arena.window),
        }),
    }];
    entries.extend(
        bindings
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: b.buffer.binding(),
            }),
    );
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.layout,
        entries: &entries,
    })
}
