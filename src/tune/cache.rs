//! What was measured on each adapter, kept so that the second visit (or run) pays nothing: one
//! line per adapter, its key and the large tiles it runs at once ("none" where the search found
//! no limit). Natively in a file under the user's cache folder; in the page in the browser's
//! storage, passed to the training worker in its URL (web storage is the page's alone).

use crate::gpu::Gpu;
use std::collections::BTreeMap;

/// Part of every key: a change to what is measured, or to the kernel it is measured on, makes
/// every earlier figure stale.
const MEASURE_VERSION: u32 = 4;
/// A line's value when the search found no count slower than one workgroup.
const UNLIMITED: &str = "none";

/// Measured figures by adapter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cache {
    tiles_at_once: BTreeMap<String, Option<usize>>,
}

impl Cache {
    /// The lines `to_text` wrote; a line that does not read is skipped (it is measured again).
    pub fn parse(text: &str) -> Cache {
        let tiles_at_once = text
            .lines()
            .filter_map(|line| {
                let (key, value) = line.rsplit_once('\t')?;
                let value = match value {
                    UNLIMITED => None,
                    n => Some(n.parse().ok().filter(|&n: &usize| n > 0)?),
                };
                Some((key.to_string(), value))
            })
            .collect();
        Cache { tiles_at_once }
    }

    pub fn to_text(&self) -> String {
        self.tiles_at_once
            .iter()
            .map(|(key, value)| match value {
                Some(n) => format!("{key}\t{n}\n"),
                None => format!("{key}\t{UNLIMITED}\n"),
            })
            .collect()
    }

    /// The figure measured on the adapter of `key`: None if never measured.
    pub fn tiles_at_once(&self, key: &str) -> Option<Option<usize>> {
        self.tiles_at_once.get(key).copied()
    }

    pub fn remember(&mut self, key: String, tiles_at_once: Option<usize>) {
        self.tiles_at_once.insert(key, tiles_at_once);
    }
}

/// What names an adapter and how its kernels are built: its name, vendor and device ids,
/// backend, driver, and the compiler its kernels go through (the browser's build of a kernel
/// runs another number at once than naga's on the same GPU). No tab or newline.
pub fn key(gpu: &Gpu) -> String {
    let info = gpu.adapter_info();
    let tuning = gpu.tuning();
    let key = format!(
        "v{MEASURE_VERSION} {} [{:04x}:{:04x}] {:?} {} {:?}",
        info.name, info.vendor, info.device, info.backend, info.driver_info, tuning.compiler
    );
    key.replace(['\t', '\n', '\r'], " ")
}

/// The file natively: `$WEBGRAD_CACHE_DIR/tuning.tsv`, else under `$XDG_CACHE_HOME/webgrad` or
/// `~/.cache/webgrad`; None where none of them is set.
#[cfg(not(target_arch = "wasm32"))]
pub fn file() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let folder = var("WEBGRAD_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("webgrad")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("webgrad")))?;
    Some(folder.join("tuning.tsv"))
}

/// Writes a cache's `text` to `path` whole or not at all: a temporary file beside it, renamed
/// over it.
#[cfg(not(target_arch = "wasm32"))]
pub fn save(text: &str, path: &std::path::Path) -> std::io::Result<()> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_reads_back_what_it_wrote_and_skips_what_does_not_read() {
        let mut cache = Cache::default();
        cache.remember(
            "v1 NVIDIA H100 [10de:2330] Vulkan 570 Native".into(),
            Some(132),
        );
        cache.remember("v1 Apple M2 [0000:0000] Metal  Native".into(), None);
        let text = cache.to_text();
        assert_eq!(Cache::parse(&text), cache);
        let garbled = format!("{text}no tab here\nkey\t0\nkey2\t-3\nkey3\tmany\n");
        assert_eq!(Cache::parse(&garbled), cache);
        assert_eq!(
            cache.tiles_at_once("v1 NVIDIA H100 [10de:2330] Vulkan 570 Native"),
            Some(Some(132))
        );
        assert_eq!(cache.tiles_at_once("another"), None);
    }
}
