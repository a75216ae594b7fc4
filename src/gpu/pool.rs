//! A size-class buffer pool, and the device's methods that lend from it (`Gpu::alloc`, …): a
//! dropped tensor's buffer goes back here and the next tensor of the same class reuses it, so
//! after warm-up a training step creates no GPU buffer at all.

use super::Gpu;
use crate::error::Result;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// What a pooled buffer is for; buffers of different kinds never mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum BufferKind {
    /// Tensor storage, bound to kernels and copied to and from.
    Storage,
    /// CPU-mappable staging for readback.
    Readback,
}

impl BufferKind {
    fn usage(self) -> wgpu::BufferUsages {
        use wgpu::BufferUsages as U;
        match self {
            BufferKind::Storage => U::STORAGE | U::COPY_SRC | U::COPY_DST,
            BufferKind::Readback => U::MAP_READ | U::COPY_DST,
        }
    }
}

/// Rounds a request up to its size class: four classes per power of two, at least 256 bytes,
/// so at most a quarter of a buffer is ever wasted; sixteen past 1 MiB, at most a sixteenth,
/// where the bytes count (GPT-2 124M's weights took 531 MB instead of 574).
pub(crate) fn size_class(bytes: u64) -> u64 {
    let bytes = bytes.max(256);
    let top = bytes.next_power_of_two();
    // Classes at 4/8, 5/8, 6/8, 7/8 and 8/8 of `top`, or at 16/32, 17/32, ... 32/32.
    let step = if top > FINE_CLASSES_PAST {
        top / 32
    } else {
        top / 8
    };
    bytes.div_ceil(step) * step
}

/// The size past which classes are finer (`size_class`).
const FINE_CLASSES_PAST: u64 = 1 << 20;

/// The pool as the device lends it: buffers for tensors, and what it holds.
impl Gpu {
    /// The most GPU memory the pool held at once since the last call, in bytes (a report's
    /// figure: a sample of `Counters::bytes_allocated` misses what came and went between).
    pub fn take_peak_bytes(&self) -> u64 {
        self.pool.borrow_mut().take_peak()
    }

    /// A storage buffer of at least `bytes` from the pool. `for_upload` asks for one whose
    /// last use has already been submitted, because queue writes run before pending commands;
    /// it may be larger than a binding (a table read in windows), where a kernel's output,
    /// bound whole, is refused before anything is allocated.
    pub(crate) fn alloc(self: &Rc<Self>, bytes: u64, for_upload: bool) -> Result<PooledBuffer> {
        self.check_size(bytes)?;
        if !for_upload {
            self.check_binding(bytes)?;
        }
        let after = for_upload.then(|| self.submits());
        Ok(self.pool.borrow_mut().acquire(
            self,
            bytes,
            BufferKind::Storage,
            after,
            self.largest_buffer(),
        ))
    }

    /// A storage buffer of `bytes`' own size class, for a tensor kept a long time (a
    /// recomputed block's input until backward): `alloc` may lend a free buffer up to twice
    /// the size, which for a kept tensor is memory held for nothing (GPT-2's block inputs
    /// in f16 took the f32 activations' buffers, and the page held 18 MB more, not 37 less).
    pub(crate) fn alloc_kept(self: &Rc<Self>, bytes: u64) -> Result<PooledBuffer> {
        self.check_size(bytes)?;
        self.check_binding(bytes)?;
        let own = size_class(bytes).min(self.largest_buffer());
        Ok(self
            .pool
            .borrow_mut()
            .acquire(self, bytes, BufferKind::Storage, None, own))
    }

    /// Destroys the GPU buffers the pool keeps free, returning their memory (call it when a
    /// model of other sizes replaces the old one). What was recorded is submitted first: the
    /// bind groups that name those buffers go with them.
    pub fn release_free_buffers(&self) {
        if self.batch.borrow_mut().clear_bind_groups(self) {
            self.count_submit();
        }
        self.pool.borrow_mut().trim();
    }
}

/// Steps a free buffer may go untaken before the pool destroys it (`BufferPool::end_step`):
/// two, since steps need not take the same buffers every time (a chain of ops takes two in
/// turns, and a step may begin on the one the step before left free).
const IDLE_STEPS: u64 = 2;

/// `class`, then for a class past 1 MiB the larger classes up to twice it (and up to
/// `largest`) whose free buffers a request of `class` may take: the large transient buffers of
/// a step's phases (a product's split sums of a few sizes, one at a time) then share buffers
/// instead of each size holding its own. Small ones keep to their class: a sample written
/// between steps would otherwise take the step's buffers, and the step make others.
fn classes_serving(class: u64, largest: u64) -> impl Iterator<Item = u64> {
    let last = match class > FINE_CLASSES_PAST {
        true => (2 * class).min(largest).max(class),
        false => class,
    };
    std::iter::successors(Some(class), |&c| Some(size_class(c + 1))).take_while(move |&c| c <= last)
}

/// A GPU buffer, or a part of one, with an id that no other buffer of the same `Gpu` ever
/// gets, even after this one is destroyed: cached bind groups are keyed by it (wgpu's own
/// handles may be reused).
#[derive(Clone, Debug)]
pub struct BufferRef {
    pub id: u64,
    pub buffer: wgpu::Buffer,
    /// Where the part starts, in bytes (0 for a whole buffer).
    pub offset: u64,
    /// The part's size in bytes; None for the whole buffer.
    pub size: Option<u64>,
}

impl BufferRef {
    /// A whole buffer.
    pub fn whole(id: u64, buffer: wgpu::Buffer) -> BufferRef {
        BufferRef {
            id,
            buffer,
            offset: 0,
            size: None,
        }
    }

    /// `bytes` of this buffer (or part) from `offset` bytes in.
    pub fn part(&self, offset: u64, bytes: u64) -> BufferRef {
        BufferRef {
            offset: self.offset + offset,
            size: Some(bytes),
            ..self.clone()
        }
    }

    /// The bytes a kernel bound to it sees.
    pub fn binding_size(&self) -> u64 {
        self.size.unwrap_or(self.buffer.size() - self.offset)
    }

    /// As a binding resource: the part, or the whole buffer.
    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.buffer,
            offset: self.offset,
            size: self.size.and_then(wgpu::BufferSize::new),
        })
    }
}

impl std::ops::Deref for BufferRef {
    type Target = wgpu::Buffer;
    fn deref(&self) -> &wgpu::Buffer {
        &self.buffer
    }
}

struct FreeBuffer {
    buffer: BufferRef,
    /// The submit count when it was released: its last use is in that batch or earlier.
    released_at: u64,
    /// The training step it was released in (`BufferPool::end_step`).
    released_in_step: u64,
}

/// The pool of free buffers, by (kind, size class).
#[derive(Default)]
pub(crate) struct BufferPool {
    free: FxHashMap<(BufferKind, u64), Vec<FreeBuffer>>,
    pub created: u64,
    pub bytes_live: u64,
    pub bytes_allocated: u64,
    /// The most `bytes_allocated` has been since the last `take_peak`: what the pool held at
    /// its highest, a phase's buffers (an evaluation's) that were destroyed since included.
    peak: u64,
    /// Training steps ended so far (`end_step`).
    step: u64,
}

impl BufferPool {
    /// Takes a free buffer of the class of `bytes` (or of a larger class, `classes_serving`),
    /// or creates one. With `uploaded_after`, only a buffer released before that submit
    /// qualifies (see `Gpu::alloc`).
    pub fn acquire(
        &mut self,
        gpu: &Rc<Gpu>,
        bytes: u64,
        kind: BufferKind,
        uploaded_after: Option<u64>,
        largest: u64,
    ) -> PooledBuffer {
        // Never round past what the device can hold (the caller checked `bytes` itself).
        let class = size_class(bytes).min(largest).max(bytes);
        let found =
            classes_serving(class, largest).find_map(|c| self.take((kind, c), uploaded_after));
        let buffer = found.unwrap_or_else(|| self.create(gpu, class, kind));
        let class = buffer.size();
        self.bytes_live += class;
        PooledBuffer {
            gpu: gpu.clone(),
            buffer: Some(buffer),
            class,
            kind,
        }
    }

    /// The free buffer of `key` with the lowest id (released before `uploaded_after`).
    fn take(&mut self, key: (BufferKind, u64), uploaded_after: Option<u64>) -> Option<BufferRef> {
        let list = self.free.get_mut(&key)?;
        let found = match uploaded_after {
            None => list.pop(),
            Some(epoch) => list
                .iter()
                .rposition(|f| f.released_at < epoch)
                .map(|i| list.remove(i)),
        };
        found.map(|f| f.buffer)
    }

    fn create(&mut self, gpu: &Gpu, class: u64, kind: BufferKind) -> BufferRef {
        self.created += 1;
        self.bytes_allocated += class;
        self.peak = self.peak.max(self.bytes_allocated);
        let buffer = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: class,
            usage: kind.usage(),
            mapped_at_creation: false,
        });
        BufferRef::whole(self.created, buffer)
    }

    /// The most bytes the pool held since the last call (or since it was made); the count
    /// starts again from what it holds now.
    pub fn take_peak(&mut self) -> u64 {
        std::mem::replace(&mut self.peak, self.bytes_allocated).max(self.bytes_allocated)
    }

    /// Drops every free buffer (e.g. when a new model of other sizes replaces the old one);
    /// wgpu frees each once the GPU work that used it is done.
    pub fn trim(&mut self) {
        for (_, list) in self.free.drain() {
            self.bytes_allocated -= list.iter().map(|f| f.buffer.size()).sum::<u64>();
        }
    }

    /// A training step ended: destroys the free storage buffers that nothing has taken in the
    /// last `IDLE_STEPS` steps (an evaluation's, a sample's, a view's, those of a class the
    /// steps no longer ask for), and returns their ids. A step asks for the same buffers each
    /// time, so its own stay; the rest would otherwise be held for good, each size class at
    /// the most it ever held at once (the page fine-tuning GPT-2 held 167 MB more so).
    pub fn end_step(&mut self) -> Vec<u64> {
        let ended = self.step;
        self.step += 1;
        let mut gone = Vec::new();
        for ((kind, _), list) in &mut self.free {
            if *kind != BufferKind::Storage {
                continue;
            }
            list.retain(|f| {
                let idle = f.released_in_step + IDLE_STEPS <= ended;
                if idle {
                    gone.push(f.buffer.id);
                    self.bytes_allocated -= f.buffer.size();
                }
                !idle
            });
        }
        gone
    }

    /// Keeps each free list sorted by id, highest first, so that `acquire` hands out the free
    /// buffer with the lowest id: which buffers a step gets then depends only on which are
    /// free, not on the order earlier steps released them, and a step that repeats gets the
    /// same buffers as the last one (and finds its bind groups cached).
    fn release(&mut self, buffer: BufferRef, class: u64, kind: BufferKind, epoch: u64) {
        self.bytes_live -= class;
        let list = self.free.entry((kind, class)).or_default();
        let at = list.partition_point(|f| f.buffer.id > buffer.id);
        list.insert(
            at,
            FreeBuffer {
                buffer,
                released_at: epoch,
                released_in_step: self.step,
            },
        );
    }
}

/// A GPU buffer on loan from the pool; it returns there when dropped.
pub(crate) struct PooledBuffer {
    gpu: Rc<Gpu>,
    buffer: Option<BufferRef>,
    class: u64,
    kind: BufferKind,
}

impl PooledBuffer {
    pub fn buffer(&self) -> &wgpu::Buffer {
        self.handle()
    }

    /// The buffer with its id, for binding to kernels.
    pub fn handle(&self) -> &BufferRef {
        self.buffer
            .as_ref()
            .expect("a pooled buffer is present until dropped")
    }
}

impl PooledBuffer {
    /// Drops the buffer instead of returning it to the pool (its mapping state is unknown).
    pub fn discard(mut self) {
        if self.buffer.take().is_some() {
            let mut pool = self.gpu.pool.borrow_mut();
            pool.bytes_live -= self.class;
            pool.bytes_allocated -= self.class;
        }
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if let Some(buffer) = self.buffer.take() {
            let epoch = self.gpu.submits();
            self.gpu
                .pool
                .borrow_mut()
                .release(buffer, self.class, self.kind, epoch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_round_up_by_at_most_a_quarter() {
        assert_eq!(size_class(1), 256);
        assert_eq!(size_class(256), 256);
        assert_eq!(size_class(257), 320);
        assert_eq!(size_class(1000), 1024);
        assert_eq!(size_class(1025), 1280);
        for bytes in [300u64, 5000, 70_001, 1 << 20] {
            let c = size_class(bytes);
            assert!(
                c >= bytes && (c as f64) <= bytes as f64 * 1.25 + 1.0,
                "{bytes} -> {c}"
            );
        }
        for bytes in [(1u64 << 20) + 1, 7_077_888, 9_437_185, 154_389_504] {
            let c = size_class(bytes);
            assert!(
                c >= bytes && (c as f64) <= bytes as f64 * 1.0625,
                "{bytes} -> {c}"
            );
        }
        // GPT-2's 768 × 3,072 weight, 9 MiB, takes its own size.
        assert_eq!(size_class(9 << 20), 9 << 20);
    }
}
