//! A per-kernel profile from timestamp queries, natively (WEBGRAD_PROFILE=1) and in the page
//! (`?bench=1&profile=1`): while profiling, each dispatch runs in its own compute pass whose
//! start and end are timestamped; the timestamps are resolved at every submit and read back,
//! asynchronously, when the caller waits for the GPU anyway (`Gpu::finished`, readback), then
//! added to each kernel's total. Nothing waits per dispatch, so the same code runs in the
//! browser, whose timestamps Chrome rounds (to 100 µs unless its WebGPU developer features are
//! on): read its totals over many dispatches, not single ones.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Dispatches timed between two collections; later ones go untimed (and uncounted) until the
/// next. 2 queries each, within WebGPU's 4096 queries per set.
const CAPACITY: u32 = 2048;

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Asks the next `Gpu::new` for a profile (the page's `?profile=1`).
pub fn request_profile() {
    REQUESTED.store(true, Ordering::Relaxed);
}

#[derive(Default)]
pub(crate) struct Profile {
    pub totals: HashMap<String, (u64, Duration)>,
}

impl Profile {
    pub fn enabled() -> bool {
        REQUESTED.load(Ordering::Relaxed)
            || (cfg!(not(target_arch = "wasm32"))
                && std::env::var("WEBGRAD_PROFILE").is_ok_and(|v| v == "1"))
    }

    pub fn add(&mut self, kernel: String, took: Duration) {
        let e = self.totals.entry(kernel).or_default();
        e.0 += 1;
        e.1 += took;
    }

    /// The kernels by total time, slowest first, one per line: the time and the calls over
    /// `steps` (1: the totals).
    pub fn report(&self, steps: usize) -> String {
        let mut rows: Vec<_> = self.totals.iter().collect();
        rows.sort_by_key(|row| std::cmp::Reverse(row.1 .1));
        let per = steps.max(1) as f64;
        rows.iter()
            .map(|(k, (n, t))| {
                let (ms, calls) = (t.as_secs_f64() * 1e3 / per, *n as f64 / per);
                format!("{ms:>10.3} ms {calls:>7.1} × {k}\n")
            })
            .collect()
    }
}

/// Timestamps around each profiled dispatch's pass, where the adapter has timestamp queries.
pub(crate) struct KernelTimer {
    set: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    readable: wgpu::Buffer,
    tick_ns: f64,
    /// The kernels timed since the last collection, in query order.
    names: Vec<String>,
    /// Whether `readable` holds the latest resolve of `names`.
    copied: bool,
}

impl KernelTimer {
    /// The features to ask the device for: timestamps when profiling and available.
    pub fn features(adapter: &wgpu::Adapter) -> wgpu::Features {
        if Profile::enabled() {
            adapter.features() & wgpu::Features::TIMESTAMP_QUERY
        } else {
            wgpu::Features::empty()
        }
    }

    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Option<KernelTimer> {
        if !Profile::enabled() || !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let bytes = 2 * CAPACITY as u64 * 8;
        let buffer = |usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("kernel timestamps"),
                size: bytes,
                usage,
                mapped_at_creation: false,
            })
        };
        Some(KernelTimer {
            set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("kernel timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * CAPACITY,
            }),
            resolved: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            readable: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            tick_ns: queue.get_timestamp_period() as f64,
            names: Vec::new(),
            copied: false,
        })
    }

    /// The timestamp writes for a pass holding the kernel `name`, or None when full.
    pub fn writes(&mut self, name: String) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let i = self.names.len() as u32;
        if i >= CAPACITY {
            return None;
        }
        self.names.push(name);
        self.copied = false;
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        })
    }

    /// Records copying every timestamp so far out (the passes have ended): the last submit's
    /// copy holds them all.
    pub fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder) {
        let queries = 2 * self.names.len() as u32;
        if queries == 0 || self.copied {
            return;
        }
        encoder.resolve_query_set(&self.set, 0..queries, &self.resolved, 0);
        encoder.copy_buffer_to_buffer(&self.resolved, 0, &self.readable, 0, queries as u64 * 8);
        self.copied = true;
    }

    /// The buffer to map and how many kernels it times, when a resolve was submitted.
    pub fn pending(&self) -> Option<(&wgpu::Buffer, usize)> {
        (self.copied && !self.names.is_empty()).then_some((&self.readable, self.names.len()))
    }

    /// The kernels' durations from the mapped timestamps; starts a new collection.
    pub fn take(&mut self, ticks: &[u64]) -> Vec<(String, Duration)> {
        let names = std::mem::take(&mut self.names);
        self.copied = false;
        names
            .into_iter()
            .zip(ticks.chunks_exact(2))
            .map(|(name, t)| {
                let ns = t[1].saturating_sub(t[0]) as f64 * self.tick_ns;
                (name, Duration::from_nanos(ns as u64))
            })
            .collect()
    }
}
