//! The GPU context: adapter and device set-up, limits, and the shared machinery every op uses
//! (buffer pool, pipeline cache, command batching, readback).

mod attention_paths;
mod batch;
mod bind_groups;
mod bounds;
mod choices;
mod counters;
mod limits;
mod matrix_units;
#[cfg(target_arch = "wasm32")]
pub(crate) mod nudge;
mod params;
mod pipelines;
mod pool;
mod precision;
mod product_variants;
mod profile;
mod readback;
mod reflect;
#[cfg(not(target_arch = "wasm32"))]
mod spin;
#[cfg(target_arch = "wasm32")]
mod subgroup_matrix;
mod template;
mod tuning;

pub use attention_paths::{AttentionPath, AttentionPaths, AttentionShape};
pub use batch::Binding;
pub(crate) use bind_groups::MAX_BINDINGS;
pub use counters::Counters;
pub use limits::{LimitsAsked, LIMITS_PARAM, LIMITS_VAR};
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) use matrix_units::assert_in_chromes_dialect;
pub use matrix_units::{Browser, Lacking, MatrixUnits};
pub use params::{
    KernelParams, NoParams, ParamField, WgslType, ELEMENTWISE_WORKGROUP, ROW_WORKGROUP,
};
pub use pipelines::{unchecked_shaders, Kernel};
pub use pool::BufferRef;
pub(crate) use pool::{BufferKind, PooledBuffer};
pub use precision::{F16Products, Precision, PrecisionChoice};
pub use product_variants::{ProductShape, ProductVariant, ProductVariants, Tiles};
pub use profile::request_profile;
pub use template::expand as expand_wgsl;
pub use tuning::{Compiler, Tuning};

use crate::error::{Error, Result};
use batch::Batch;
use pipelines::PipelineCache;
use pool::BufferPool;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// One GPU device with everything needed to run kernels on it.
pub struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    pub(crate) pool: RefCell<BufferPool>,
    pipelines: RefCell<PipelineCache>,
    batch: RefCell<Batch>,
    counters: Cell<Counters>,
    profile: Option<RefCell<profile::Profile>>,
    /// The kernel variants this device gets (`Tuning`); tests may set another.
    tuning: Cell<Tuning>,
    /// The product variants measured fastest here, by shape (src/tune/products.rs).
    product_variants: RefCell<ProductVariants>,
    /// The attention paths measured fastest here, by shape (src/tune/attention.rs).
    attention_paths: RefCell<AttentionPaths>,
    /// Errors the device reported on its own (validation, out of memory), oldest first.
    errors: Arc<Mutex<Vec<String>>>,
    /// Why the device was lost, once it is: every later use of it fails with this.
    lost: Arc<Mutex<Option<String>>>,
    /// The f16 matrix units the device was opened with, or what the adapter lacked for them.
    matrix_units: std::result::Result<MatrixUnits, Lacking>,
    /// The precision the latest `set_precision` chose, with its reason.
    precision: RefCell<Option<PrecisionChoice>>,
}

impl Gpu {
    /// Finds an adapter (WebGPU in the browser, Vulkan/Metal/DX12 natively) and opens a device
    /// with the adapter's real limits, so that big models can use what the hardware offers
    /// (natively, `WEBGRAD_LIMITS=webgpu` asks for WebGPU's guaranteed ones: `LimitsAsked`).
    pub async fn new() -> Result<Rc<Gpu>> {
        let asked = match cfg!(target_arch = "wasm32") {
            true => LimitsAsked::Adapter,
            false => LimitsAsked::from_env().map_err(Error::DeviceRequest)?,
        };
        Gpu::open(asked).await
    }

    /// As `new`, with the limits `asked` for.
    pub async fn open(asked: LimitsAsked) -> Result<Rc<Gpu>> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN
                | wgpu::Backends::METAL
                | wgpu::Backends::DX12
                | wgpu::Backends::BROWSER_WEBGPU,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::NoAdapter(e.to_string()))?;
        let limits = asked.limits(adapter.limits());
        let features = profile::KernelTimer::features(&adapter);
        let (device, queue, matrix_units) =
            precision::open_device(&adapter, &limits, features).await?;
        let info = adapter.get_info();
        let errors = Arc::new(Mutex::new(Vec::new()));
        let sink = errors.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut list) = sink.lock() {
                list.push(e.to_string());
            }
        }));
        let lost = Arc::new(Mutex::new(None));
        let why = lost.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut why) = why.lock() {
                *why = Some(lost_reason(reason, &message));
            }
        });
        let batch = Batch::new(&device, &limits, profile::KernelTimer::new(&device, &queue));
        let tuning = Tuning::of(&info, &limits);
        Ok(Rc::new(Gpu {
            device,
            queue,
            info,
            limits,
            pool: RefCell::new(BufferPool::default()),
            pipelines: RefCell::new(PipelineCache::default()),
            batch: RefCell::new(batch),
            counters: Cell::new(Counters::default()),
            tuning: Cell::new(tuning),
            product_variants: RefCell::new(ProductVariants::default()),
            attention_paths: RefCell::new(AttentionPaths::default()),
            profile: profile::Profile::enabled().then(|| RefCell::new(profile::Profile::default())),
            errors,
            lost,
            matrix_units,
            precision: RefCell::new(None),
        }))
    }

    /// Why the device was lost (a driver reset, the browser reclaiming it), or None while it
    /// works. A lost device never comes back: its owner makes a new `Gpu`.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().ok().and_then(|l| l.clone())
    }

    /// Destroys the device, as a driver reset would lose it: how the tests make a device loss.
    pub fn destroy(&self) {
        self.device.destroy();
    }

    /// The adapter's name, e.g. "NVIDIA H200" or "llvmpipe (LLVM 15.0.6, 256 bits)".
    pub fn adapter_name(&self) -> String {
        // Browsers often keep the adapter's description private.
        match (self.info.name.is_empty(), self.info.device_type) {
            (false, _) => self.info.name.clone(),
            (true, wgpu::DeviceType::Cpu) => "WebGPU software adapter (runs on the CPU)".into(),
            #[cfg(target_arch = "wasm32")]
            (true, _) if !subgroup_matrix::described().is_empty() => {
                format!("WebGPU adapter ({})", subgroup_matrix::described())
            }
            (true, _) => "WebGPU adapter".into(),
        }
    }

    /// Everything the adapter reports about itself.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The device limits in force (the adapter's own).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// True when kernels should be the variants for adapters that emulate a GPU on the CPU
    /// (lavapipe, SwiftShader): no workgroup memory and no barriers (`Tuning::emulated`).
    pub fn is_cpu_emulated(&self) -> bool {
        self.tuning.get().emulated
    }

    /// Forces one set of kernel variants (Some) or goes back to the adapter's (None); tests
    /// use it to cover both sets on one adapter.
    pub fn use_emulated_kernels(&self, choice: Option<bool>) {
        let emulated = choice.unwrap_or_else(|| Tuning::of(&self.info, &self.limits).emulated);
        self.tuning.set(Tuning {
            emulated,
            ..self.tuning.get()
        });
    }

    /// The kernel variants this device gets.
    pub fn tuning(&self) -> Tuning {
        self.tuning.get()
    }

    /// Gives the device another tuning: tests run the browser's kernel variants natively so.
    pub fn set_tuning(&self, tuning: Tuning) {
        self.tuning.set(tuning);
    }

    /// The product variants chosen on this device, and the shapes that wait to be measured.
    pub fn product_variants(&self) -> std::cell::RefMut<'_, ProductVariants> {
        self.product_variants.borrow_mut()
    }

    /// The attention paths chosen on this device, and the shapes that wait to be measured.
    pub fn attention_paths(&self) -> std::cell::RefMut<'_, AttentionPaths> {
        self.attention_paths.borrow_mut()
    }

    /// Takes the errors the device reported since the last call (a kernel that failed to
    /// compile, memory exhausted, ...). Empty when all went well.
    pub fn take_errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .map(|mut e| std::mem::take(&mut *e))
            .unwrap_or_default()
    }

    /// A snapshot of the work counters.
    pub fn counters(&self) -> Counters {
        let mut c = self.counters.get();
        let pool = self.pool.borrow();
        c.buffers_created = pool.created;
        c.bytes_live = pool.bytes_live;
        c.bytes_allocated = pool.bytes_allocated;
        let batch = self.batch.borrow();
        c.bind_groups_created = batch.bind_groups.created;
        c.param_bytes = batch.param_bytes;
        c
    }

    /// Records one compute dispatch into the pending command encoder; an error naming the
    /// kernel when its text cannot be built or `params` and `bindings` do not fit its WGSL.
    pub fn dispatch<P: KernelParams>(
        &self,
        kernel: &Kernel,
        params: &P,
        bindings: &[Binding],
        groups: [u32; 3],
    ) -> Result<()> {
        self.check_bindings(bindings)?;
        let pipeline = self
            .pipelines
            .borrow_mut()
            .get::<P>(&self.device, kernel, bindings)?;
        let timed = self.profile.is_some().then(|| kernel.label());
        let submits = self.batch.borrow_mut().dispatch(
            self,
            (&pipeline, timed),
            bytemuck::bytes_of(params),
            bindings,
            groups,
        );
        pipeline.dispatched.set(pipeline.dispatched.get() + 1);
        let mut c = self.counters.get();
        c.submits += submits;
        c.dispatches += 1;
        self.counters.set(c);
        Ok(())
    }

    /// Dispatches so far of the kernels of one family (a shader's name: "matmul" for the
    /// 128 × 128 product, "matmul_small" for the 64 × 64 one, …): tests assert with it which
    /// variant a planner chose.
    pub fn dispatches_of(&self, family: &str) -> u64 {
        self.pipelines.borrow().dispatches_of(family)
    }

    /// When profiling (WEBGRAD_PROFILE=1, or `request_profile`), the GPU time per kernel so
    /// far, slowest first; empty where the adapter has no timestamp queries.
    pub fn profile_report(&self) -> Option<String> {
        self.profile.as_ref().map(|p| p.borrow().report(1))
    }

    /// The report so far with each kernel's time and calls divided by `steps`, and starts a
    /// new one.
    pub fn take_profile(&self, steps: usize) -> Option<String> {
        let report = self.profile.as_ref().map(|p| p.borrow().report(steps));
        self.clear_profile();
        report
    }

    /// Starts a new profile, dropping what the one so far holds.
    pub fn clear_profile(&self) {
        if let Some(p) = &self.profile {
            p.borrow_mut().totals.clear();
        }
    }

    /// Reads the kernel timestamps of the work submitted so far into the profile, once the
    /// GPU has done that work (the caller waited for it).
    pub(crate) async fn collect_profile(&self) -> Result<()> {
        let pending = self
            .batch
            .borrow()
            .timer
            .as_ref()
            .and_then(|t| t.pending().map(|(buffer, n)| (buffer.clone(), n)));
        let (Some((buffer, n)), Some(profile)) = (pending, &self.profile) else {
            return Ok(());
        };
        let data = readback::map_and_copy(self, &buffer, n as u64 * 16).await;
        // Unmapped whatever happened: a buffer left mapped (or pending) would fail every later
        // resolve into it.
        buffer.unmap();
        let ticks: Vec<u64> = bytemuck::pod_collect_to_vec(&data?);
        let times = self
            .batch
            .borrow_mut()
            .timer
            .as_mut()
            .map(|t| t.take(&ticks));
        for (name, took) in times.into_iter().flatten() {
            profile.borrow_mut().add(name, took);
        }
        Ok(())
    }

    /// Submits what was recorded and waits until the GPU has finished it: the end of a timed
    /// step in the benchmark. Device errors raised meanwhile come back as the error.
    pub async fn finished(&self) -> Result<()> {
        self.flush();
        let (sender, receiver) = futures_channel::oneshot::channel();
        self.queue.on_submitted_work_done(move || {
            let _ = sender.send(());
        });
        self.answer(receiver).await?;
        self.check_errors()?;
        self.collect_profile().await
    }

    /// The answer of a callback the GPU calls when its work is done: natively the device is
    /// polled until then (nothing else drives it); in the browser the device polls itself, and
    /// is nudged to look sooner (`nudge`).
    pub(crate) async fn answer<T>(
        &self,
        receiver: futures_channel::oneshot::Receiver<T>,
    ) -> Result<T> {
        #[cfg(not(target_arch = "wasm32"))]
        let answer = self.answer_natively(receiver).await?;
        #[cfg(target_arch = "wasm32")]
        let answer = nudge::answer(&self.queue, receiver).await;
        self.batch.borrow_mut().caught_up(self.tuning());
        answer.map_err(|_| self.readback_failed("the GPU dropped the request"))
    }

    #[cfg(not(target_arch = "wasm32"))]
    async fn answer_natively<T>(
        &self,
        mut receiver: futures_channel::oneshot::Receiver<T>,
    ) -> Result<std::result::Result<T, futures_channel::oneshot::Canceled>> {
        // Not on a CPU-emulated GPU: the polling thread would take a core from it.
        if !self.is_cpu_emulated() {
            let poll = || self.device.poll(wgpu::PollType::Poll).is_ok();
            if let Some(answer) = spin::answer_soon(poll, &mut receiver) {
                return Ok(Ok(answer));
            }
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.readback_failed(e))?;
        Ok(receiver.await)
    }

    /// The error for a readback that failed: the device's loss when it was lost (the usual
    /// cause), the failure itself otherwise.
    pub(crate) fn readback_failed(&self, failure: impl std::fmt::Display) -> Error {
        match self.lost() {
            Some(why) => Error::DeviceLost(why),
            None => Error::Readback(failure.to_string()),
        }
    }

    /// The errors the device reported on its own since the last check, as one error: work that
    /// failed validation must never pass for done.
    pub(crate) fn check_errors(&self) -> Result<()> {
        if let Some(why) = self.lost() {
            return Err(Error::DeviceLost(why));
        }
        let errors = self.take_errors();
        if !errors.is_empty() {
            return Err(Error::Gpu(errors.join("; ")));
        }
        Ok(())
    }

    /// Submits everything recorded so far (the end of a training step).
    pub fn flush(&self) {
        if self.batch.borrow_mut().flush(self) {
            self.count_submit();
        }
    }

    /// Ends a training step: submits it, or leaves a short one for the next steps to join
    /// (see `Batch::step_recorded`). A wait or a readback submits whatever is left. The pool
    /// then destroys the free buffers no step has used since the last (`BufferPool::end_step`).
    pub fn step_recorded(&self) {
        if self.batch.borrow_mut().step_recorded(self) {
            self.count_submit();
        }
        let gone = self.pool.borrow_mut().end_step();
        if !gone.is_empty() {
            self.batch.borrow_mut().bind_groups.forget(&gone);
        }
    }

    /// Submits so far: the epoch that tells when a released buffer's last use was sent.
    pub(crate) fn submits(&self) -> u64 {
        self.counters.get().submits
    }

    fn count_submit(&self) {
        let mut c = self.counters.get();
        c.submits += 1;
        self.counters.set(c);
    }

    /// Records a buffer-to-buffer copy into the pending encoder.
    pub(crate) fn copy(&self, src: &BufferRef, dst: &BufferRef, bytes: u64) {
        self.batch.borrow_mut().copy(self, src, dst, bytes);
    }

    /// Zeroes the first `bytes` of `buffer`, in order with the dispatches around it.
    pub(crate) fn clear(&self, buffer: &BufferRef, bytes: u64) {
        self.batch.borrow_mut().clear(self, buffer, bytes);
    }

    /// Reads `bytes` of `buffer` back to the CPU: the only sync point, and it is async.
    pub(crate) async fn read(self: &Rc<Self>, buffer: &BufferRef, bytes: u64) -> Result<Vec<u8>> {
        readback::read(self, buffer, bytes).await
    }

    /// Workgroups to cover `n` elements of an elementwise kernel, one thread each.
    pub fn groups_elementwise(&self, n: usize) -> [u32; 3] {
        self.groups_1d(n, ELEMENTWISE_WORKGROUP)
    }

    /// Workgroups to cover `n` invocations of a 1-D kernel with `size` threads per group,
    /// spilling into y when x would pass the per-dimension limit.
    pub fn groups_1d(&self, n: usize, size: u32) -> [u32; 3] {
        let groups = (n as u64).div_ceil(size as u64).max(1);
        let max = self.limits.max_compute_workgroups_per_dimension as u64;
        if groups <= max {
            [groups as u32, 1, 1]
        } else {
            [max as u32, groups.div_ceil(max) as u32, 1]
        }
    }
}

/// A lost device's reason as a phrase for `Error::DeviceLost`.
fn lost_reason(reason: wgpu::DeviceLostReason, message: &str) -> String {
    match (reason, message.trim().trim_end_matches('.')) {
        (wgpu::DeviceLostReason::Destroyed, _) => "it was destroyed".to_string(),
        (wgpu::DeviceLostReason::Unknown, "") => "the driver or the browser took it back".into(),
        (wgpu::DeviceLostReason::Unknown, m) => {
            format!("the driver or the browser took it back: {m}")
        }
    }
}
