//! A coarse per-kernel profile for native runs: with WEBGRAD_PROFILE=1 every dispatch is
//! submitted and waited for on its own, and its wall time added to its kernel's total. Slow,
//! but it says where the time goes on any adapter, without timestamp queries.

use std::collections::HashMap;
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
