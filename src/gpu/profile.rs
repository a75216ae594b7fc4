//! A per-kernel profile for native runs: with WEBGRAD_PROFILE=1 every dispatch is submitted
//! and waited for on its own, and its time added to its kernel's total: the GPU time between
//! timestamps where the adapter has timestamp queries, else the wall time around the submit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
pub(crate) struct Profile {
    pub totals: HashMap<String, (u64, Duration)>,
}

impl Profile {
    pub fn enabled() -> bool {
        cfg!(not(target_arch = "wasm32"))
            && std::env::var("WEBGRAD_PROFILE").is_ok_and(|v| v == "1")
    }

    pub fn add(&mut self, kernel: String, took: Duration) {
        let e = self.totals.entry(kernel).or_default();
        e.0 += 1;
        e.1 += took;
    }

    /// The kernels by total time, slowest first, one per line.
    pub fn report(&self) -> String {
        let mut rows: Vec<_> = self.totals.iter().collect();
        rows.sort_by(|a, b| b.1 .1.cmp(&a.1 .1));
        rows.iter()
            .map(|(k, (n, t))| format!("{:>10.3} ms {:>7} × {k}\n", t.as_secs_f64() * 1e3, n))
            .collect()
    }
}

/// GPU time of one compute pass from timestamp queries, where the adapter has them: the
/// profile then measures the kernel alone, not the submit and the wait around it.
pub(crate) struct PassTimer {
    set: wgpu::QuerySet,
    resolved: wgpu::Buffer,
    readable: wgpu::Buffer,
    tick_ns: f64,
    /// Whether a timed pass was recorded since the last resolve.
    pub pending: bool,
}

impl PassTimer {
    /// The features to ask the device for: timestamps when profiling and available.
    pub fn features(adapter: &wgpu::Adapter) -> wgpu::Features {
        if Profile::enabled() {
            adapter.features() & wgpu::Features::TIMESTAMP_QUERY
        } else {
            wgpu::Features::empty()
        }
    }

    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Option<PassTimer> {
        if !device.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            return None;
        }
        let buffer = |usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("pass timestamps"),
                size: 16,
                usage,
                mapped_at_creation: false,
            })
        };
        Some(PassTimer {
            set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("pass timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            }),
            resolved: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
            readable: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            tick_ns: queue.get_timestamp_period() as f64,
            pending: false,
        })
    }

    /// Timestamps at the start and end of the pass.
    pub fn writes(&self) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }
    }

    /// Records copying the pass's timestamps out, after the pass ended.
    pub fn resolve(&mut self, encoder: &mut wgpu::CommandEncoder) {
        encoder.resolve_query_set(&self.set, 0..2, &self.resolved, 0);
        encoder.copy_buffer_to_buffer(&self.resolved, 0, &self.readable, 0, 16);
        self.pending = false;
    }

    /// The last resolved pass's duration, once the GPU is idle (native only).
    pub fn read(&self, device: &wgpu::Device) -> Option<Duration> {
        let mapped = Arc::new(AtomicBool::new(false));
        let done = mapped.clone();
        self.readable.map_async(wgpu::MapMode::Read, .., move |r| {
            done.store(r.is_ok(), Ordering::Relaxed)
        });
        let _ = device.poll(wgpu::PollType::wait_indefinitely());
        if !mapped.load(Ordering::Relaxed) {
            return None;
        }
        let ticks: Option<[u64; 2]> = self
            .readable
            .get_mapped_range(..)
            .ok()
            .map(|view| bytemuck::pod_read_unaligned(&view[..16]));
        self.readable.unmap();
        let ticks = ticks?;
        let ns = ticks[1].saturating_sub(ticks[0]) as f64 * self.tick_ns;
        Some(Duration::from_nanos(ns as u64))
    }
}
