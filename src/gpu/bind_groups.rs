//! Bind groups cached by (pipeline, buffers), each with a parameter slot of its own. A training
//! step asks for the same pipelines with the same pooled buffers every time, so after warm-up
//! it creates none; creating one costs more CPU than the rest of a dispatch, most of all in the
//! browser.
//!
//! A group binds its slot of the parameter arena plainly, not at a dynamic offset: in Chrome
//! on an NVIDIA GPU the large products (without prefetch, as the browser runs them) take 1-13 %
//! less time so, and no `setBindGroup` carries an offsets array (docs/BENCHMARKS.md,
//! "Parameters bound plainly"). A slot holds its parameters until the submit that reads them,
//! so a kernel launched twice over the same buffers in one submit needs two groups: a key keeps
//! a list, and the n-th dispatch of that key in a submit takes the n-th. A step submitted at
//! its end (a long step of the session's `train_step`) asks for the same ones each time; short
//! steps that share a submit (`Gpu::step_recorded`) take up to as many groups per key as a
//! submit holds uses of it, made once.
//!
//! A cached group binds buffers, not tensors: when a buffer goes back to the pool and on to
//! another tensor, a dispatch for that tensor finds the group of that same buffer, which is
//! right. A buffer's id is never reused (see `BufferRef`), and the cache forgets the groups of
//! the buffers the pool destroys, so a group never outlives a buffer it names.

use super::pipelines::Pipeline;
use super::Binding;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// The most storage buffers one kernel binds (WebGPU's default maxStorageBuffersPerShaderStage).
pub(crate) const MAX_BINDINGS: usize = 8;

/// The parameter arena: one uniform buffer of `slots` windows, `stride` bytes apart, of which
/// a kernel sees `window` bytes.
pub(crate) struct Arena {
    pub buffer: wgpu::Buffer,
    pub window: u64,
    pub stride: u64,
    pub slots: u32,
}

#[derive(Hash, PartialEq, Eq)]
struct Key {
    pipeline: u64,
    /// (buffer id, offset, size) in binding order; id 0 past the last binding (ids start
    /// at 1). The size too: a whole buffer and a part of it from offset 0 differ.
    buffers: [(u64, u64, u64); MAX_BINDINGS],
}

/// The groups of one key, each with its arena slot, and how many this submit has taken.
#[derive(Default)]
struct Groups {
    made: SmallVec<[(u32, wgpu::BindGroup); 1]>,
    /// The submit `taken` counts in; an older one means none taken yet in this one.
    submit: u64,
    taken: u32,
}

#[derive(Default)]
pub(crate) struct BindGroupCache {
    groups: FxHashMap<Key, Groups>,
    /// Arena slots handed out (one per group, in order of creation).
    slots: u32,
    /// The submit being recorded, counted from 0.
    submit: u64,
    /// Bind groups created so far (cache misses).
    pub created: u64,
}

impl BindGroupCache {
    /// The arena slot and group for the next dispatch of `pipeline` over `bindings` in this
    /// submit, made on first use. None when the arena has no slot left: the caller submits,
    /// clears the cache and asks again.
    pub fn get(
        &mut self,
        device: &wgpu::Device,
        pipeline: &Pipeline,
        arena: &Arena,
        bindings: &[Binding],
    ) -> Option<(u32, &wgpu::BindGroup)> {
        let groups = self.groups.entry(Key::new(pipeline, bindings)).or_default();
        if groups.submit != self.submit {
            groups.submit = self.submit;
            groups.taken = 0;
        }
        let n = groups.taken as usize;
        if n == groups.made.len() {
            if self.slots >= arena.slots {
                return None;
            }
            let slot = self.slots;
            self.slots += 1;
            self.created += 1;
            let group = create(device, pipeline, arena, slot, bindings);
            groups.made.push((slot, group));
        }
        groups.taken += 1;
        let (slot, group) = &groups.made[n];
        Some((*slot, group))
    }

    /// The recorded work was submitted: every group is free to take again.
    pub fn submitted(&mut self) {
        self.submit += 1;
    }

    /// Forgets the groups that bind any of the buffers `gone` (destroyed by the pool, their
    /// ids never given again). Their slots stay taken until the next `clear`: no slot is
    /// given out again while parameters may wait in it.
    pub fn forget(&mut self, gone: &[u64]) {
        let gone: FxHashSet<u64> = gone.iter().copied().collect();
        self.groups
            .retain(|key, _| !key.buffers.iter().any(|(id, _, _)| gone.contains(id)));
    }

    /// Forgets every group and frees every slot (the pool is about to destroy buffers they
    /// may name, or the arena is full). Only between submits: `Batch::clear_bind_groups`.
    pub fn clear(&mut self) {
        self.groups.clear();
        self.slots = 0;
    }
}

impl Key {
    fn new(pipeline: &Pipeline, bindings: &[Binding]) -> Key {
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
        key
    }
}

fn create(
    device: &wgpu::Device,
    pipeline: &Pipeline,
    arena: &Arena,
    slot: u32,
    bindings: &[Binding],
) -> wgpu::BindGroup {
    let mut entries = vec![wgpu::BindGroupEntry {
        binding: 0,
        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &arena.buffer,
            offset: slot as u64 * arena.stride,
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
