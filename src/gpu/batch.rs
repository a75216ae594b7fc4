//! Command batching: dispatches are recorded into one encoder and one compute pass, and their
//! parameters into one arena, all submitted together at a sync point (DESIGN.md rule 4).
//! Each dispatch's parameters go to the arena slot of its bind group (see `bind_groups`);
//! the slots written since the last submit are uploaded just before it, in a few runs.

use super::bind_groups::{Arena, BindGroupCache};
use super::params::PARAM_BYTES;
use super::pipelines::Pipeline;
use super::profile::KernelTimer;
use super::{BufferRef, Gpu, Tuning};

/// Parameter slots in the arena, one per cached bind group (4 MiB of 256-byte windows): when
/// they run out the batch is submitted and the cache starts again.
const ARENA_SLOTS: u32 = 16384;
/// Written slots this close together are uploaded in one write, the gap with them: a write
/// costs more in the browser than a few kilobytes more to copy.
const WRITE_GAP: u32 = 16;
/// Dispatches recorded before the batch is submitted on its own, so that the GPU starts on a
/// long step while the rest of it is still being recorded (in the browser recording costs
/// tens of microseconds per dispatch). Small steps (an MLP's ~30 dispatches) stay one submit.
const SUBMIT_EVERY: u32 = 96;
/// A training step that ends with fewer dispatches than this recorded since the last submit is
/// not submitted on its own: the next steps join it (an mlp's 23-dispatch steps go three to a
/// submit, a GPT's steps of a hundred or more one each). In the browser each submit costs a
/// command encoder, a compute pass, the parameters' upload and a flush to the GPU process.
const STEPS_SHARE_A_SUBMIT_UNDER: u32 = 64;
/// When the first submit after a wait ended comes: after `first` dispatches, if more than
/// `after` were recorded between the last two waits. The GPU then has nothing to do, and a long
/// step waited for (the CLI's, the benchmark's) would otherwise leave it idle while the first
/// `SUBMIT_EVERY` dispatches are recorded.
struct EarlySubmit {
    after: u32,
    first: u32,
}

/// Natively after a long stretch only: short steps stay one submit.
const NATIVE_EARLY_SUBMIT: EarlySubmit = EarlySubmit {
    after: SUBMIT_EVERY,
    first: 16,
};
/// In the browser on a real GPU, after any but the shortest: Chrome's GPU process decodes and
/// checks a submit's commands only once they arrive, before the GPU sees any of them; sent in
/// two parts, the first is decoded and run while the rest is recorded. The first part 8
/// dispatches, an mlp step's forward: its waited step took 0.43-0.54 ms in Chrome on an H200
/// against 0.56-0.66 with 16 (docs/BENCHMARKS.md, "The first 8 dispatches sent early").
const BROWSER_EARLY_SUBMIT: EarlySubmit = EarlySubmit { after: 8, first: 8 };
/// In the browser on a GPU emulated on the CPU (SwiftShader), whose work takes the cores the
/// page records on: 16, as before the browser's 8, which made its mlp step up to 5 % slower.
const EMULATED_BROWSER_EARLY_SUBMIT: EarlySubmit = EarlySubmit {
    after: 16,
    first: 16,
};

fn early_submit(tuning: Tuning) -> EarlySubmit {
    match (tuning.in_browser, tuning.emulated) {
        (false, _) => NATIVE_EARLY_SUBMIT,
        (true, false) => BROWSER_EARLY_SUBMIT,
        (true, true) => EMULATED_BROWSER_EARLY_SUBMIT,
    }
}

/// A storage buffer bound to a kernel, in binding order after the parameters.
pub struct Binding<'a> {
    pub buffer: &'a BufferRef,
    pub writable: bool,
}

impl<'a> Binding<'a> {
    pub fn read(buffer: &'a BufferRef) -> Self {
        Binding {
            buffer,
            writable: false,
        }
    }
    pub fn write(buffer: &'a BufferRef) -> Self {
        Binding {
            buffer,
            writable: true,
        }
    }
}

pub(crate) struct Batch {
    encoder: Option<wgpu::CommandEncoder>,
    pass: Option<wgpu::ComputePass<'static>>,
    /// The arena's contents as last written, grown to the highest slot used.
    params: Vec<u8>,
    /// Slots written since the last submit.
    written: Vec<u32>,
    arena: Arena,
    /// Dispatches recorded since the last submit.
    recorded: u32,
    /// Dispatches to record before submitting on its own: fewer after a wait that ended a
    /// long stretch (`caught_up`), else `SUBMIT_EVERY`.
    submit_at: u32,
    /// Dispatches recorded since the last wait ended.
    since_wait: u32,
    pub bind_groups: BindGroupCache,
    /// Times each dispatch when profiling with timestamps (one dispatch per pass then).
    pub timer: Option<KernelTimer>,
    /// Bytes of kernel parameters uploaded so far.
    pub param_bytes: u64,
}

impl Batch {
    pub fn new(device: &wgpu::Device, limits: &wgpu::Limits, timer: Option<KernelTimer>) -> Batch {
        let stride = PARAM_BYTES.max(limits.min_uniform_buffer_offset_alignment as u64);
        let arena = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("kernel parameters"),
            size: stride * ARENA_SLOTS as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Batch {
            encoder: None,
            pass: None,
            params: Vec::new(),
            written: Vec::new(),
            arena: Arena {
                buffer: arena,
                window: PARAM_BYTES,
                stride,
                slots: ARENA_SLOTS,
            },
            recorded: 0,
            submit_at: SUBMIT_EVERY,
            since_wait: 0,
            bind_groups: BindGroupCache::default(),
            timer,
            param_bytes: 0,
        }
    }

    /// Records one dispatch (in a pass of its own, timed, when `timed` names it). Returns how
    /// many times the batch was submitted meanwhile: before it when the arena was full, after
    /// it every `SUBMIT_EVERY` dispatches (sooner after a wait, see `caught_up`).
    pub fn dispatch(
        &mut self,
        gpu: &Gpu,
        (pipeline, timed): (&Pipeline, Option<String>),
        params: &[u8],
        bindings: &[super::Binding],
        groups: [u32; 3],
    ) -> u64 {
        // The pipeline cache refused larger parameter types when it built the pipeline.
        debug_assert!(params.len() as u64 <= PARAM_BYTES);
        let mut submits = 0;
        let (slot, bind_group) = match self.bind_group(gpu, pipeline, bindings) {
            Some(found) => found,
            None => {
                submits += self.clear_bind_groups(gpu) as u64;
                self.bind_group(gpu, pipeline, bindings)
                    .expect("an empty cache has every slot free")
            }
        };
        self.write_params(slot, params);
        let pass = self.pass(gpu, timed);
        pass.set_pipeline(&pipeline.pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(groups[0], groups[1], groups[2]);
        self.recorded += 1;
        self.since_wait = self.since_wait.saturating_add(1);
        if self.recorded >= self.submit_at {
            submits += self.flush(gpu) as u64;
        }
        submits
    }

    fn bind_group(
        &mut self,
        gpu: &Gpu,
        pipeline: &Pipeline,
        bindings: &[super::Binding],
    ) -> Option<(u32, wgpu::BindGroup)> {
        self.bind_groups
            .get(&gpu.device, pipeline, &self.arena, bindings)
            .map(|(slot, group)| (slot, group.clone()))
    }

    /// Keeps `params` for `slot`'s upload before the next submit, unless the slot already
    /// holds them: the arena keeps what was uploaded (and starts zeroed, as `params` does), and
    /// a cached bind group's slot gets the same kernel on the same buffers step after step,
    /// mostly with the same parameters. In the browser every write crosses to the GPU process.
    fn write_params(&mut self, slot: u32, params: &[u8]) {
        let at = slot as usize * self.arena.stride as usize;
        if self.params.len() < at + params.len() {
            self.params.resize(at + self.arena.stride as usize, 0);
        }
        let held = &mut self.params[at..at + params.len()];
        if held == params {
            return;
        }
        held.copy_from_slice(params);
        self.written.push(slot);
    }

    /// Uploads the slots written since the last submit, nearby ones in one write.
    fn upload_params(&mut self, gpu: &Gpu) {
        self.written.sort_unstable();
        let stride = self.arena.stride as usize;
        let mut runs = self.written.iter().peekable();
        while let Some(&first) = runs.next() {
            let mut last = first;
            while let Some(&&next) = runs.peek() {
                if next > last + WRITE_GAP {
                    break;
                }
                last = next;
                runs.next();
            }
            let (from, to) = (first as usize * stride, (last as usize + 1) * stride);
            gpu.queue
                .write_buffer(&self.arena.buffer, from as u64, &self.params[from..to]);
            self.param_bytes += (to - from) as u64;
        }
        self.written.clear();
    }

    /// Records a copy; copies cannot happen inside a compute pass, so the pass ends first.
    pub fn copy(&mut self, gpu: &Gpu, src: &BufferRef, dst: &BufferRef, bytes: u64) {
        self.pass = None;
        self.encoder(gpu).copy_buffer_to_buffer(
            &src.buffer,
            src.offset,
            &dst.buffer,
            dst.offset,
            bytes,
        );
    }

    /// Records zeroing the first `bytes` of `buffer` (no binding: a buffer larger than one).
    pub fn clear(&mut self, gpu: &Gpu, buffer: &BufferRef, bytes: u64) {
        self.pass = None;
        self.encoder(gpu)
            .clear_buffer(&buffer.buffer, buffer.offset, Some(bytes));
    }

    /// Submits what was recorded. Returns false when there was nothing to submit.
    pub fn flush(&mut self, gpu: &Gpu) -> bool {
        self.pass = None;
        let Some(mut encoder) = self.encoder.take() else {
            return false;
        };
        if let Some(timer) = self.timer.as_mut() {
            timer.resolve(&mut encoder);
        }
        self.recorded = 0;
        self.submit_at = SUBMIT_EVERY;
        self.upload_params(gpu);
        gpu.queue.submit([encoder.finish()]);
        self.bind_groups.submitted();
        true
    }

    /// A training step was recorded: submits unless fewer than `STEPS_SHARE_A_SUBMIT_UNDER`
    /// dispatches await a submit. Returns whether it submitted.
    pub fn step_recorded(&mut self, gpu: &Gpu) -> bool {
        self.recorded >= STEPS_SHARE_A_SUBMIT_UNDER && self.flush(gpu)
    }

    /// Submits what was recorded, then forgets every bind group and frees every parameter
    /// slot: a slot given out again must not hold parameters still waiting to be written.
    /// Returns whether it submitted.
    pub fn clear_bind_groups(&mut self, gpu: &Gpu) -> bool {
        let submitted = self.flush(gpu);
        self.bind_groups.clear();
        submitted
    }

    /// The GPU finished everything submitted so far (a wait ended): after a long enough
    /// stretch, the next work is sent early (`early_submit`, for the browser or natively, a GPU
    /// emulated on the CPU or not).
    pub fn caught_up(&mut self, tuning: Tuning) {
        let early = early_submit(tuning);
        if self.since_wait > early.after {
            self.submit_at = early.first;
        }
        self.since_wait = 0;
    }

    fn encoder(&mut self, gpu: &Gpu) -> &mut wgpu::CommandEncoder {
        self.encoder
            .get_or_insert_with(|| gpu.device.create_command_encoder(&Default::default()))
    }

    /// The open compute pass, or a new one; a timed dispatch gets a new pass of its own.
    fn pass(&mut self, gpu: &Gpu, timed: Option<String>) -> &mut wgpu::ComputePass<'static> {
        let writes = match (timed, self.timer.as_mut()) {
            (Some(name), Some(timer)) => {
                self.pass = None;
                timer.writes(name)
            }
            _ => None,
        };
        if self.pass.is_none() {
            let encoder = self
                .encoder
                .get_or_insert_with(|| gpu.device.create_command_encoder(&Default::default()));
            let pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: writes,
                })
                .forget_lifetime();
            self.pass = Some(pass);
        }
        self.pass.as_mut().expect("pass was just created")
    }
}
