//! What was measured on each adapter, kept so that the second visit (or run) pays nothing: one
//! line per adapter, its key, the large tiles it runs at once ("none" where the search found no
//! limit) and the attention block it ran fastest for each measured head width ("none" where none
//! was measured). Natively in a file under the user's cache folder; in the page in the browser's
//! storage, passed to the training worker in its URL (web storage is the page's alone).

use crate::gpu::Gpu;
use std::collections::BTreeMap;

/// Part of every key: a change to what is measured, or to the kernel it is measured on, makes
/// every earlier figure stale.
const MEASURE_VERSION: u32 = 3;
/// A figure that is not there: the search found no count slower than one workgroup, or no
/// block was measured.
const NONE: &str = "none";

/// What was measured on one adapter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Measured {
    pub tiles_at_once: Option<usize>,
    /// For heads of each of `gpu::MEASURED_HEADS` wide.
    pub attention_blocks: [Option<usize>; 2],
}

/// Measured figures by adapter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cache {
    measured: BTreeMap<String, Measured>,
}

/// A figure as a line holds it, or None where the text is not one.
fn figure(text: &str) -> Option<Option<usize>> {
    match text {
        NONE => Some(None),
        n => Some(Some(n.parse().ok().filter(|&n: &usize| n > 0)?)),
    }
}

fn text(figure: Option<usize>) -> String {
    figure.map_or(NONE.to_string(), |n| n.to_string())
}

impl Cache {
    /// The lines `to_text` wrote; a line that does not read is skipped (it is measured again).
    pub fn parse(text: &str) -> Cache {
        let measured = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.rsplitn(4, '\t');
                let wide = figure(fields.next()?)?;
                let narrow = figure(fields.next()?)?;
                let tiles = figure(fields.next()?)?;
                let measured = Measured {
                    tiles_at_once: tiles,
                    attention_blocks: [narrow, wide],
                };
                Some((fields.next()?.to_string(), measured))
            })
            .collect();
        Cache { measured }
    }

    pub fn to_text(&self) -> String {
        self.measured
            .iter()
            .map(|(key, m)| {
                let [narrow, wide] = m.attention_blocks.map(text);
                format!("{key}\t{}\t{narrow}\t{wide}\n", text(m.tiles_at_once))
            })
            .collect()
    }

    /// What was measured on the adapter of `key`: None if never measured.
    pub fn measured(&self, key: &str) -> Option<Measured> {
        self.measured.get(key).copied()
    }

    pub fn remember(&mut self, key: String, measured: Measured) {
        self.measured.insert(key, measured);
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

/// The cache in `path`, empty when there is none.
#[cfg(not(target_arch = "wasm32"))]
pub fn load(path: &std::path::Path) -> Cache {
    std::fs::read_to_string(path).map_or_else(|_| Cache::default(), |t| Cache::parse(&t))
}

/// Writes the cache to `path` whole or not at all: a temporary file beside it, renamed over it.
#[cfg(not(target_arch = "wasm32"))]
pub fn save(cache: &Cache, path: &std::path::Path) -> std::io::Result<()> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let partial = path.with_extension(format!("partial-{}", std::process::id()));
    std::fs::write(&partial, cache.to_text())?;
    std::fs::rename(&partial, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_reads_back_what_it_wrote_and_skips_what_does_not_read() {
        let h100 = "v3 NVIDIA H100 [10de:2330] Vulkan 570 Naga";
        let mut cache = Cache::default();
        let both = Measured {
            tiles_at_once: Some(132),
            attention_blocks: [Some(32), None],
        };
        cache.remember(h100.into(), both);
        cache.remember(
            "v3 Apple M2 [0000:0000] Metal  Naga".into(),
            Measured::default(),
        );
        let text = cache.to_text();
        assert_eq!(Cache::parse(&text), cache);
        let garbled = format!("{text}no tab\nk\t0\t32\t32\nk2\t-3\tnone\tnone\nk3\t132\t32\n");
        assert_eq!(Cache::parse(&garbled), cache);
        assert_eq!(cache.measured(h100), Some(both));
        assert_eq!(cache.measured("another"), None);
    }
}
