//! Compute pipelines, created once and cached by what was compiled (source, entry point,
//! template slots, override constants), the parameter type and the binding pattern; each is
//! checked against the shader's declarations when it is built (see reflect.rs).

use super::reflect::Declared;
use super::{params, template, Binding, KernelParams};
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::any::TypeId;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

/// A kernel to run: a WGSL source, its entry point, the values of its template slots and of
/// its `override` constants. Slots are written `{{NAME}}` in the shader and change its text
/// (an expression, an address space, an array length); a choice a value can make (a flag, a
/// factor) is an `override` constant instead, so one compiled module serves every value.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The shader family (its file name under shaders/), used in labels and the profile.
    pub family: &'static str,
    pub source: &'static str,
    pub entry: &'static str,
    pub slots: Slots,
    pub constants: SmallVec<[(&'static str, f64); 12]>,
}

/// A kernel's slot values by name, inline (the matmul has 5, no kernel more than 8).
type Slots = SmallVec<[(&'static str, SlotValue); 8]>;

/// A template slot's value (`Kernel::slot`): text of the program's (an expression, a type, an
/// include's name) or a number. Copied, not allocated: a kernel and its cache key are built
/// for every dispatch.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum SlotValue {
    Text(&'static str),
    Number(u64),
}

impl From<&'static str> for SlotValue {
    fn from(text: &'static str) -> SlotValue {
        SlotValue::Text(text)
    }
}

impl From<usize> for SlotValue {
    fn from(n: usize) -> SlotValue {
        SlotValue::Number(n as u64)
    }
}

impl From<u32> for SlotValue {
    fn from(n: u32) -> SlotValue {
        SlotValue::Number(n.into())
    }
}

impl fmt::Display for SlotValue {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            SlotValue::Text(text) => f.write_str(text),
            SlotValue::Number(n) => write!(f, "{n}"),
        }
    }
}

impl Kernel {
    /// A kernel without template slots.
    pub fn new(family: &'static str, source: &'static str, entry: &'static str) -> Kernel {
        Kernel {
            family,
            source,
            entry,
            slots: SmallVec::new(),
            constants: SmallVec::new(),
        }
    }

    /// The same kernel with its `override name` set to `value` (a bool as 0 or 1).
    pub fn constant(mut self, name: &'static str, value: impl Into<f64>) -> Kernel {
        self.constants.push((name, value.into()));
        self
    }

    /// The kernel with its slots and constants, as the profile names it.
    pub fn label(&self) -> String {
        let constants = self.constants.iter().map(|(n, v)| format!("{n}={v}"));
        let slots = self.slots.iter().map(|(n, v)| format!("{n}={v}"));
        let all: Vec<String> = slots.chain(constants).collect();
        format!("{} {}", self.name(), all.join(" "))
    }

    /// The kernel's name in errors: `family:entry`.
    fn name(&self) -> String {
        format!("{}:{}", self.family, self.entry)
    }

    /// The same kernel with `{{name}}` replaced by `value`.
    pub fn slot(mut self, name: &'static str, value: impl Into<SlotValue>) -> Kernel {
        self.slots.push((name, value.into()));
        self
    }

    /// The module's key: the source text by address (static or generated once), the entry
    /// point and the slots. No formatting: it is built for every dispatch.
    fn module_key(&self) -> ModuleKey {
        ModuleKey {
            source: (self.source.as_ptr() as usize, self.source.len()),
            entry: Placed(self.entry),
            slots: self
                .slots
                .iter()
                .map(|&(name, value)| (Placed(name), value.into()))
                .collect(),
        }
    }

    /// The pipeline's key: the module's, the constants, the parameter type and the bindings.
    fn key<P: KernelParams>(&self, bindings: &[Binding]) -> PipelineKey {
        PipelineKey {
            module: self.module_key(),
            constants: self
                .constants
                .iter()
                .map(|&(n, v)| (Placed(n), v.to_bits()))
                .collect(),
            params: TypeId::of::<P>(),
            writable: bindings
                .iter()
                .enumerate()
                .fold(0, |m, (i, b)| m | (b.writable as u32) << i),
            bindings: bindings.len() as u8,
        }
    }

    /// The shader text as the GPU gets it (template.rs); an error naming the kernel if a slot
    /// given is not declared or any template text is left, before the GPU sees it.
    pub(crate) fn wgsl(&self) -> Result<String> {
        let slots: Vec<(&str, String)> = self
            .slots
            .iter()
            .map(|(n, v)| (*n, v.to_string()))
            .collect();
        template::expand(self.source, &slots).map_err(|why| Error::Kernel {
            kernel: self.name(),
            why,
        })
    }

    /// Natively, without a device: the kernel's text expanded and validated by naga, and its
    /// declarations checked against the parameter type `P`, storage bindings written as
    /// `writable` says, and its constants, as the pipeline cache checks them when it builds the
    /// pipeline. Tests build every variant a planner can emit so.
    #[cfg(all(test, not(target_arch = "wasm32")))]
    pub(crate) fn check_without_device<P: KernelParams>(&self, writable: &[bool]) -> Result<()> {
        let error = |why: String| Error::Kernel {
            kernel: self.label(),
            why,
        };
        let text = self.wgsl()?;
        let module =
            naga::front::wgsl::parse_str(&text).map_err(|e| error(e.emit_to_string(&text)))?;
        let flags = naga::valid::ValidationFlags::all();
        let info = naga::valid::Validator::new(flags, naga::valid::Capabilities::all())
            .validate(&module)
            .map_err(|e| error(e.emit_to_string(&text)))?;
        self.check_spirv(&module, &info).map_err(error)?;
        let declared = Declared::parse(&text).map_err(error)?;
        match self.launch_mismatch::<P>(&declared, writable) {
            Some(why) => Err(error(why)),
            None => Ok(()),
        }
    }

    /// The kernel through naga's SPIR-V writer, as wgpu's Vulkan backend writes it with and
    /// without checks on buffer indices (devices with robust buffer access go without): the
    /// writer can fail on what validates (naga 30 left a cooperative matrix store's stride
    /// unwritten where it was computed in the call's arguments), which only a device would
    /// otherwise tell.
    #[cfg(all(test, not(target_arch = "wasm32")))]
    fn check_spirv(
        &self,
        module: &naga::Module,
        info: &naga::valid::ModuleInfo,
    ) -> std::result::Result<(), String> {
        use naga::back::spv;
        use naga::proc::{BoundsCheckPolicies, BoundsCheckPolicy};
        let mut constants = naga::back::PipelineConstants::default();
        for &(name, value) in &self.constants {
            constants.insert(name.to_string(), value);
        }
        let entry = Some((naga::ShaderStage::Compute, self.entry));
        let (module, info) =
            naga::back::pipeline_constants::process_overrides(module, info, entry, &constants)
                .map_err(|e| format!("constants: {e}"))?;
        let pipeline = spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: self.entry.to_string(),
        };
        for buffer in [BoundsCheckPolicy::Restrict, BoundsCheckPolicy::Unchecked] {
            let options = spv::Options {
                lang_version: (1, 6),
                bounds_check_policies: BoundsCheckPolicies {
                    index: BoundsCheckPolicy::Restrict,
                    buffer,
                    ..BoundsCheckPolicies::default()
                },
                ..spv::Options::default()
            };
            let written = std::panic::catch_unwind(|| {
                spv::write_vec(&module, &info, &options, Some(&pipeline))
            });
            match written {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(format!("SPIR-V ({buffer:?} buffers): {e}")),
                Err(_) => {
                    return Err(format!(
                        "SPIR-V ({buffer:?} buffers): naga's writer panicked"
                    ))
                }
            }
        }
        Ok(())
    }

    /// Why a launch with parameters `P`, storage bindings written as `writable` says, and this
    /// kernel's constants does not fit what its shader `declared`, if it does not.
    fn launch_mismatch<P: KernelParams>(
        &self,
        declared: &Declared,
        writable: &[bool],
    ) -> Option<String> {
        let size = std::mem::size_of::<P>();
        if size as u64 > params::PARAM_BYTES {
            let most = params::PARAM_BYTES;
            return Some(format!("{size} bytes of parameters, more than {most}"));
        }
        declared.mismatch((&P::fields(), size), writable, &self.constants)
    }
}

/// Text of the program (a name, a slot's text) in a cache key, compared and hashed by where it
/// lives rather than letter by letter: the keys are built and looked up for every dispatch, and
/// hashing and comparing their strings was a part of the page's CPU time per dispatch
/// (docs/BENCHMARKS.md, "The optimizer's gather"). The same text at two addresses makes two
/// keys, which at worst builds one pipeline twice.
#[derive(Clone, Copy)]
struct Placed(&'static str);

impl PartialEq for Placed {
    fn eq(&self, other: &Placed) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Placed {}

impl Hash for Placed {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.0.as_ptr() as usize);
        state.write_usize(self.0.len());
    }
}

/// A slot's value in a cache key.
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
enum PlacedValue {
    Text(Placed),
    Number(u64),
}

impl From<SlotValue> for PlacedValue {
    fn from(value: SlotValue) -> PlacedValue {
        match value {
            SlotValue::Text(text) => PlacedValue::Text(Placed(text)),
            SlotValue::Number(n) => PlacedValue::Number(n),
        }
    }
}

#[derive(Hash, PartialEq, Eq, Clone)]
struct ModuleKey {
    source: (usize, usize),
    entry: Placed,
    slots: SmallVec<[(Placed, PlacedValue); 8]>,
}

#[derive(Hash, PartialEq, Eq, Clone)]
struct PipelineKey {
    module: ModuleKey,
    /// Override constants by name, values as f64 bits.
    constants: SmallVec<[(Placed, u64); 12]>,
    params: TypeId,
    /// Which storage bindings are read-write, bit i for binding i + 1.
    writable: u32,
    bindings: u8,
}

/// A pipeline with its bind-group layout.
pub(crate) struct Pipeline {
    /// Unique within its cache: bind groups are cached by it.
    pub id: u64,
    pub pipeline: wgpu::ComputePipeline,
    pub layout: wgpu::BindGroupLayout,
    /// Its kernel's family (the shader), and how many times it was dispatched: which variant a
    /// planner chose, for tests that claim to cover one.
    family: &'static str,
    pub dispatched: std::cell::Cell<u64>,
}

#[derive(Default)]
pub(crate) struct PipelineCache {
    pipelines: FxHashMap<PipelineKey, Rc<Pipeline>>,
    modules: FxHashMap<ModuleKey, (wgpu::ShaderModule, Declared)>,
}

impl PipelineCache {
    /// Dispatches so far of the kernels of `family` (a shader's name, as `Kernel::new` gives
    /// it), in all their variants.
    pub fn dispatches_of(&self, family: &str) -> u64 {
        self.pipelines
            .values()
            .filter(|p| p.family == family)
            .map(|p| p.dispatched.get())
            .sum()
    }

    /// The pipeline for `kernel` with parameters `P` and the binding pattern of `bindings`,
    /// built on first use; an error naming the kernel when its text, parameters, bindings or
    /// constants do not fit what the shader declares.
    pub fn get<P: KernelParams>(
        &mut self,
        device: &wgpu::Device,
        kernel: &Kernel,
        bindings: &[Binding],
    ) -> Result<Rc<Pipeline>> {
        let key = kernel.key::<P>(bindings);
        if let Some(p) = self.pipelines.get(&key) {
            return Ok(p.clone());
        }
        let error = |why: String| Error::Kernel {
            kernel: kernel.name(),
            why,
        };
        let module_key = kernel.module_key();
        if !self.modules.contains_key(&module_key) {
            let text = kernel.wgsl()?;
            let declared = Declared::parse(&text).map_err(error)?;
            #[cfg(not(target_arch = "wasm32"))]
            super::reflect::check_workgroup_memory(device, &text).map_err(error)?;
            let module = module(device, kernel.family, text);
            self.modules.insert(module_key.clone(), (module, declared));
        }
        let (module, declared) = &self.modules[&module_key];
        let writable: SmallVec<[bool; 8]> = bindings.iter().map(|b| b.writable).collect();
        if let Some(why) = kernel.launch_mismatch::<P>(declared, &writable) {
            return Err(error(why));
        }
        let layout = bind_group_layout(device, bindings);
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some(kernel.family),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kernel.entry),
            layout: Some(&pipeline_layout),
            module,
            entry_point: Some(kernel.entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &kernel.constants,
                ..Default::default()
            },
            cache: None,
        });
        let p = Rc::new(Pipeline {
            id: self.pipelines.len() as u64 + 1,
            pipeline,
            layout,
            family: kernel.family,
            dispatched: Default::default(),
        });
        self.pipelines.insert(key, p.clone());
        Ok(p)
    }
}

/// Compiles one shader's text.
fn module(device: &wgpu::Device, family: &str, text: String) -> wgpu::ShaderModule {
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some(family),
        source: wgpu::ShaderSource::Wgsl(text.into()),
    };
    match dropped_checks() {
        // SAFETY: only for measuring the cost of the runtime checks (WEBGRAD_UNCHECKED
        // natively); every kernel's indexing is covered by the correctness tests, and every
        // loop of ours ends (its bound is a parameter or a constant).
        Some(checks) => unsafe { device.create_shader_module_trusted(desc, checks) },
        None => device.create_shader_module(desc),
    }
}

/// Binding 0 is the kernel's parameters (a uniform: its bind group's own window of the batch's
/// parameter arena); bindings 1.. are storage buffers, read-only or read-write.
fn bind_group_layout(device: &wgpu::Device, bindings: &[Binding]) -> wgpu::BindGroupLayout {
    let mut entries = vec![wgpu::BindGroupLayoutEntry {
        binding: 0,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }];
    for (i, b) in bindings.iter().enumerate() {
        entries.push(wgpu::BindGroupLayoutEntry {
            binding: i as u32 + 1,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage {
                    read_only: !b.writable,
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        });
    }
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &entries,
    })
}

/// Whether to build shaders without some of wgpu's runtime checks: natively, with
/// WEBGRAD_UNCHECKED, for the benchmark's comparison only. The browser always checks.
pub fn unchecked_shaders() -> bool {
    dropped_checks().is_some()
}

/// The runtime checks WEBGRAD_UNCHECKED asks to build shaders without, natively: `1` drops all
/// of them, else a comma-separated list of `bounds` (indices clamped), `loops` (every loop
/// given a bound, against infinite ones) and `divisions` (integer divisors guarded against
/// zero) drops those. None where it names none of them (the shaders fully checked).
fn dropped_checks() -> Option<wgpu::ShaderRuntimeChecks> {
    let asked = std::env::var("WEBGRAD_UNCHECKED")
        .ok()
        .filter(|_| !cfg!(target_arch = "wasm32"))?;
    checks_without(&asked)
}

/// The checks without those `asked` names (dropped_checks).
fn checks_without(asked: &str) -> Option<wgpu::ShaderRuntimeChecks> {
    if asked == "1" {
        return Some(wgpu::ShaderRuntimeChecks::unchecked());
    }
    let mut checks = wgpu::ShaderRuntimeChecks::checked();
    let mut dropped = false;
    for name in asked.split(',').map(str::trim) {
        let check = match name {
            "bounds" => &mut checks.bounds_checks,
            "loops" => &mut checks.force_loop_bounding,
            "divisions" => &mut checks.int_div_checks,
            _ => continue,
        };
        *check = false;
        dropped = true;
    }
    dropped.then_some(checks)
}

#[cfg(test)]
mod tests {
    use super::checks_without;

    /// WEBGRAD_UNCHECKED drops what it names and nothing else; `1` drops every check, and a
    /// value naming none leaves the shaders checked.
    #[test]
    fn unchecked_drops_the_checks_it_names() {
        let loops = checks_without("loops").expect("loops named");
        assert!(!loops.force_loop_bounding && loops.bounds_checks && loops.int_div_checks);
        let two = checks_without("bounds, divisions").expect("two named");
        assert!(!two.bounds_checks && !two.int_div_checks && two.force_loop_bounding);
        let all = checks_without("1").expect("all");
        assert!(!all.bounds_checks && !all.force_loop_bounding && !all.int_div_checks);
        assert!(checks_without("0").is_none() && checks_without("bound").is_none());
    }
}
