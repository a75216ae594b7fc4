//! What was measured on each adapter, kept so that the second visit (or run) pays nothing: a
//! line per adapter, its key and the large tiles it runs at once ("none" where the search found
//! no limit), and a line per product shape measured on it, the key, the shape and the variant
//! that ran fastest (products.rs), and so a line per attention shape and its path
//! (attention.rs). Natively in a file under the user's cache folder; in the page
//! in the browser's storage, passed to the training worker in its URL (web storage is the
//! page's alone).

use crate::gpu::{AttentionPath, AttentionShape, Gpu, ProductShape, ProductVariant, Tiles};
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
    products: BTreeMap<(String, ProductShape), ProductVariant>,
    attention: BTreeMap<(String, AttentionShape), AttentionPath>,
}

impl Cache {
    /// The lines `to_text` wrote; a line that does not read is skipped (it is measured again).
    pub fn parse(text: &str) -> Cache {
        let mut cache = Cache::default();
        for line in text.lines() {
            match line.split('\t').collect::<Vec<_>>()[..] {
                [key, value] => {
                    let value = match value {
                        UNLIMITED => None,
                        n => match n.parse() {
                            Ok(n) if n > 0 => Some(n),
                            _ => continue,
                        },
                    };
                    cache.tiles_at_once.insert(key.to_string(), value);
                }
                [key, shape, variant] if shape.starts_with("attention ") => {
                    if let (Some(shape), Some(path)) = (read_attention(shape), read_path(variant)) {
                        cache.attention.insert((key.to_string(), shape), path);
                    }
                }
                [key, shape, variant] => {
                    if let (Some(shape), Some(variant)) = (read_shape(shape), read_variant(variant))
                    {
                        cache.products.insert((key.to_string(), shape), variant);
                    }
                }
                _ => {}
            }
        }
        cache
    }

    pub fn to_text(&self) -> String {
        let tiles = self.tiles_at_once.iter().map(|(key, value)| match value {
            Some(n) => format!("{key}\t{n}\n"),
            None => format!("{key}\t{UNLIMITED}\n"),
        });
        let products = self.products.iter().map(|((key, shape), variant)| {
            format!(
                "{key}\t{}\t{}\n",
                write_shape(shape),
                write_variant(variant)
            )
        });
        let attention = self.attention.iter().map(|((key, shape), path)| {
            format!("{key}\t{}\t{}\n", write_attention(shape), write_path(*path))
        });
        tiles.chain(products).chain(attention).collect()
    }

    /// The variants measured fastest on the adapter of `key`, by shape.
    pub fn products<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Iterator<Item = (ProductShape, ProductVariant)> + 'a {
        of_adapter(&self.products, key)
    }

    pub fn remember_product(&mut self, key: String, shape: ProductShape, variant: ProductVariant) {
        self.products.insert((key, shape), variant);
    }

    /// The attention paths measured fastest on the adapter of `key`, by shape.
    pub fn attention<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Iterator<Item = (AttentionShape, AttentionPath)> + 'a {
        of_adapter(&self.attention, key)
    }

    pub fn remember_attention(&mut self, key: String, shape: AttentionShape, path: AttentionPath) {
        self.attention.insert((key, shape), path);
    }

    /// The figure measured on the adapter of `key`: None if never measured.
    pub fn tiles_at_once(&self, key: &str) -> Option<Option<usize>> {
        self.tiles_at_once.get(key).copied()
    }

    pub fn remember(&mut self, key: String, tiles_at_once: Option<usize>) {
        self.tiles_at_once.insert(key, tiles_at_once);
    }
}

/// The shapes measured on the adapter of `key` in `measured`, with what ran fastest.
fn of_adapter<'a, S: Copy, V: Copy>(
    measured: &'a BTreeMap<(String, S), V>,
    key: &'a str,
) -> impl Iterator<Item = (S, V)> + 'a {
    measured
        .iter()
        .filter(move |((k, _), _)| k == key)
        .map(|((_, shape), value)| (*shape, *value))
}

/// "product M N K BATCHES" and the flags that are set: a (A transposed), b (B transposed),
/// split (K may be split), vec4 (the operands bind whole vec4s), f16 (the run's products may
/// take the f16 matrix units).
fn write_shape(s: &ProductShape) -> String {
    let flags = [
        (s.a_transposed, " a"),
        (s.b_transposed, " b"),
        (s.splittable, " split"),
        (s.vec4, " vec4"),
        (s.f16, " f16"),
    ];
    let set: String = flags.iter().filter(|f| f.0).map(|f| f.1).collect();
    format!("product {} {} {} {}{set}", s.m, s.n, s.k, s.batches)
}

fn read_shape(text: &str) -> Option<ProductShape> {
    let mut words = text.split(' ');
    if words.next()? != "product" {
        return None;
    }
    let mut size = || words.next()?.parse::<usize>().ok();
    let (m, n, k, batches) = (size()?, size()?, size()?, size()?);
    let flags: Vec<&str> = words.collect();
    let known = ["a", "b", "split", "vec4", "f16"];
    if flags.iter().any(|f| !known.contains(f)) {
        return None;
    }
    Some(ProductShape {
        m,
        n,
        k,
        batches,
        a_transposed: flags.contains(&"a"),
        b_transposed: flags.contains(&"b"),
        splittable: flags.contains(&"split"),
        vec4: flags.contains(&"vec4"),
        f16: flags.contains(&"f16"),
    })
}

/// "small 1", "large 4", "matrix 1": the tiles and the parts of K.
fn write_variant(v: &ProductVariant) -> String {
    let tiles = match v.tiles {
        Tiles::Small => "small",
        Tiles::Large => "large",
        Tiles::Matrix => "matrix",
    };
    format!("{tiles} {}", v.parts)
}

fn read_variant(text: &str) -> Option<ProductVariant> {
    let (tiles, parts) = text.split_once(' ')?;
    let tiles = match tiles {
        "small" => Tiles::Small,
        "large" => Tiles::Large,
        "matrix" => Tiles::Matrix,
        _ => return None,
    };
    let parts = parts.parse().ok().filter(|&p: &usize| p > 0)?;
    Some(ProductVariant { tiles, parts })
}

/// "attention BATCH T HEADS D", and " f16" where the run's products may take the matrix units.
fn write_attention(s: &AttentionShape) -> String {
    let f16 = if s.f16 { " f16" } else { "" };
    format!("attention {} {} {} {}{f16}", s.batch, s.t, s.heads, s.d)
}

fn read_attention(text: &str) -> Option<AttentionShape> {
    let words: Vec<&str> = text.split(' ').collect();
    let (sizes, f16) = match words[..] {
        ["attention", b, t, h, d] => ([b, t, h, d], false),
        ["attention", b, t, h, d, "f16"] => ([b, t, h, d], true),
        _ => return None,
    };
    let [batch, t, heads, d] = sizes.map(|w| w.parse::<usize>().ok().filter(|&n| n > 0));
    Some(AttentionShape {
        batch: batch?,
        t: t?,
        heads: heads?,
        d: d?,
        f16,
    })
}

fn write_path(path: AttentionPath) -> &'static str {
    match path {
        AttentionPath::Matrix => "matrix",
        AttentionPath::Scores => "scores",
        AttentionPath::Tiled => "tiled",
        AttentionPath::Rows => "rows",
    }
}

fn read_path(text: &str) -> Option<AttentionPath> {
    Some(match text {
        "matrix" => AttentionPath::Matrix,
        "scores" => AttentionPath::Scores,
        "tiled" => AttentionPath::Tiled,
        "rows" => AttentionPath::Rows,
        _ => return None,
    })
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

    #[test]
    fn product_variants_read_back_by_adapter() {
        let h100 = "v1 NVIDIA H100 [10de:2330] Vulkan 570 Naga".to_string();
        let shape = ProductShape {
            m: 4096,
            n: 768,
            k: 3072,
            batches: 1,
            a_transposed: false,
            b_transposed: true,
            splittable: true,
            vec4: true,
            f16: false,
        };
        let variant = ProductVariant {
            tiles: Tiles::Large,
            parts: 2,
        };
        // The same shape in a run whose products may take the matrix units, on them.
        let f16 = ProductShape { f16: true, ..shape };
        let matrix = ProductVariant {
            tiles: Tiles::Matrix,
            parts: 1,
        };
        let mut cache = Cache::default();
        cache.remember(h100.clone(), Some(132));
        cache.remember_product(h100.clone(), shape, variant);
        cache.remember_product(h100.clone(), f16, matrix);
        let text = cache.to_text();
        assert!(
            text.contains("\tproduct 4096 768 3072 1 b split vec4\tlarge 2\n"),
            "{text}"
        );
        assert!(
            text.contains("\tproduct 4096 768 3072 1 b split vec4 f16\tmatrix 1\n"),
            "{text}"
        );
        assert_eq!(Cache::parse(&text), cache);
        assert_eq!(
            cache.products(&h100).collect::<Vec<_>>(),
            [(shape, variant), (f16, matrix)]
        );
        assert_eq!(cache.products("another").count(), 0);
        // A shape or variant that does not read is skipped.
        let garbled = format!(
            "{text}{h100}\tproduct 1 2 3\tlarge 2\n{h100}\tproduct 1 2 3 4 c\tlarge 2\n\
             {h100}\tproduct 1 2 3 4\thuge 2\n{h100}\tproduct 1 2 3 4\tsmall 0\n"
        );
        assert_eq!(Cache::parse(&garbled), cache);
    }

    #[test]
    fn attention_paths_read_back_by_adapter() {
        let h200 = "v4 NVIDIA H200 [10de:2335] Vulkan 570 Naga".to_string();
        let shape = AttentionShape {
            batch: 64,
            t: 256,
            heads: 6,
            d: 64,
            f16: false,
        };
        let f16 = AttentionShape { f16: true, ..shape };
        let mut cache = Cache::default();
        cache.remember_attention(h200.clone(), shape, AttentionPath::Scores);
        cache.remember_attention(h200.clone(), f16, AttentionPath::Matrix);
        let text = cache.to_text();
        assert!(text.contains("\tattention 64 256 6 64\tscores\n"), "{text}");
        assert!(
            text.contains("\tattention 64 256 6 64 f16\tmatrix\n"),
            "{text}"
        );
        assert_eq!(Cache::parse(&text), cache);
        assert_eq!(
            cache.attention(&h200).collect::<Vec<_>>(),
            [(shape, AttentionPath::Scores), (f16, AttentionPath::Matrix)]
        );
        assert_eq!(cache.attention("another").count(), 0);
        // A shape or path that does not read is skipped, and is not read as a product.
        let garbled = format!(
            "{text}{h200}\tattention 1 2 3\ttiled\n{h200}\tattention 1 2 3 4 f32\ttiled\n\
             {h200}\tattention 1 0 3 4\ttiled\n{h200}\tattention 1 2 3 4\tfast\n"
        );
        assert_eq!(Cache::parse(&garbled), cache);
    }
}
