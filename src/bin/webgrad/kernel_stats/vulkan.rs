//! A kernel's pipeline made on the GPU's Vulkan driver with its statistics captured, and
//! read (VK_KHR_pipeline_executable_properties). The device is opened through wgpu-hal, with
//! the features webgrad's kernels use (f16, subgroups, cooperative matrices where offered) and
//! the extension added; the pipeline is made with ash, since wgpu makes its own without the
//! flag that captures them.

use super::spirv::Kernel;
use ash::vk;
use wgpu::hal;

/// What the driver reports of one kernel, on which device.
pub struct Report {
    pub device: String,
    pub statistics: Vec<(String, String)>,
}

const EXTENSION: &std::ffi::CStr = ash::khr::pipeline_executable_properties::NAME;

/// The driver's statistics of `kernel`'s compute pipeline, on the first Vulkan GPU (a
/// discrete one where there is one).
pub fn statistics(kernel: &Kernel) -> Result<Report, String> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|e| format!("no Vulkan GPU: {e}"))?;
    let device = adapter.get_info().name;
    // SAFETY: the adapter is Vulkan's (the instance has no other backend) and outlives the
    // hal adapter, which is dropped at the end of this function.
    let hal_adapter =
        unsafe { adapter.as_hal::<hal::api::Vulkan>() }.ok_or("the adapter is not a Vulkan one")?;
    if let Some(why) = unsupported(&hal_adapter) {
        return Err(format!("{device}'s {why}"));
    }
    // The features the kernels use where the adapter has them.
    let features = adapter.features() & webgrad::gpu::MatrixUnits::features();
    let open = open_with_statistics(&adapter, &hal_adapter, features)
        .map_err(|e| format!("{device}: cannot open the device: {e}"))?;
    let raw = open.device.raw_device();
    let instance = open.device.shared_instance().raw_instance();
    let subgroups = features.contains(wgpu::Features::SUBGROUP);
    // SAFETY: `raw` is a live device with the extension enabled.
    let statistics = unsafe { pipeline_statistics(instance, raw, kernel, subgroups) }
        .map_err(|e| format!("{device}: the driver refused the kernel: {e}"))?;
    Ok(Report { device, statistics })
}

/// Why the adapter cannot give the statistics, if it cannot: a Vulkan older than 1.3, for which
/// wgpu writes other SPIR-V than spirv.rs's 1.6, or a driver without the extension.
fn unsupported(adapter: &hal::vulkan::Adapter) -> Option<String> {
    let capabilities = adapter.physical_device_capabilities();
    let api = capabilities.properties().api_version;
    if api < vk::API_VERSION_1_3 {
        let (major, minor) = (vk::api_version_major(api), vk::api_version_minor(api));
        return Some(format!(
            "Vulkan is {major}.{minor}: kernel-stats writes the SPIR-V wgpu gives Vulkan 1.3"
        ));
    }
    let offered = capabilities.supports_extension(EXTENSION);
    let name = EXTENSION.to_string_lossy();
    (!offered).then(|| format!("Vulkan driver does not report pipeline statistics ({name})"))
}

/// The device of `hal_adapter` (`adapter`'s) with `features`, and the extension and its feature
/// added.
fn open_with_statistics(
    adapter: &wgpu::Adapter,
    hal_adapter: &hal::vulkan::Adapter,
    features: wgpu::Features,
) -> Result<hal::OpenDevice<hal::api::Vulkan>, hal::DeviceError> {
    let mut asked = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
        .pipeline_executable_info(true);
    let asked: *mut vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR<'static> =
        (&mut asked as *mut vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR).cast();
    let callback = Box::new(move |args: hal::vulkan::CreateDeviceCallbackArgs| {
        args.extensions.push(EXTENSION);
        // SAFETY: `asked` lives on this function's stack until the device is made (the call
        // below), and is put at the head of the create info's chain, the rest after it.
        unsafe {
            (*asked).p_next = args.create_info.p_next as *mut _;
            args.create_info.p_next = asked as *const _;
        }
    });
    // SAFETY: the features are the adapter's own, and the callback only adds an extension
    // the device offers (`unsupported` checked) and its feature.
    unsafe {
        hal_adapter.open_with_callback(
            features,
            &adapter.limits(),
            &wgpu::MemoryHints::Performance,
            Some(callback),
        )
    }
}

/// What `pipeline_statistics` made, destroyed when it returns, whichever way.
struct Made<'a> {
    device: &'a ash::Device,
    module: vk::ShaderModule,
    set: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
}

impl Drop for Made<'_> {
    fn drop(&mut self) {
        // SAFETY: each was made on `device` (or is null, which destroying ignores), and
        // nothing uses them once their maker returns.
        unsafe {
            self.device.destroy_pipeline(self.pipeline, None);
            self.device.destroy_pipeline_layout(self.layout, None);
            self.device.destroy_descriptor_set_layout(self.set, None);
            self.device.destroy_shader_module(self.module, None);
        }
    }
}

/// Makes the pipeline with its statistics captured and reads them, every executable's (a
/// compute pipeline has one). With `subgroups`, the stage lets the driver choose the
/// subgroups' width, as wgpu-hal's does where it enables them.
///
/// # Safety
/// `device` must be live, made from `instance`, with the extension's feature enabled.
unsafe fn pipeline_statistics(
    instance: &ash::Instance,
    device: &ash::Device,
    kernel: &Kernel,
    subgroups: bool,
) -> Result<Vec<(String, String)>, vk::Result> {
    let mut made = Made {
        device,
        module: vk::ShaderModule::null(),
        set: vk::DescriptorSetLayout::null(),
        layout: vk::PipelineLayout::null(),
        pipeline: vk::Pipeline::null(),
    };
    let module = vk::ShaderModuleCreateInfo::default().code(&kernel.words);
    made.module = device.create_shader_module(&module, None)?;
    let bindings: Vec<vk::DescriptorSetLayoutBinding> = kernel
        .bindings
        .iter()
        .map(|b| {
            let kind = match b.uniform {
                true => vk::DescriptorType::UNIFORM_BUFFER,
                false => vk::DescriptorType::STORAGE_BUFFER,
            };
            vk::DescriptorSetLayoutBinding::default()
                .binding(b.number)
                .descriptor_type(kind)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let set = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
    made.set = device.create_descriptor_set_layout(&set, None)?;
    let sets = [made.set];
    let layout = vk::PipelineLayoutCreateInfo::default().set_layouts(&sets);
    made.layout = device.create_pipeline_layout(&layout, None)?;
    let widths = match subgroups {
        true => vk::PipelineShaderStageCreateFlags::ALLOW_VARYING_SUBGROUP_SIZE,
        false => vk::PipelineShaderStageCreateFlags::empty(),
    };
    let stage = vk::PipelineShaderStageCreateInfo::default()
        .flags(widths)
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(made.module)
        .name(c"main");
    let info = vk::ComputePipelineCreateInfo::default()
        .flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR)
        .stage(stage)
        .layout(made.layout);
    let pipelines = device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None);
    made.pipeline = pipelines.map_err(|(_, e)| e)?[0];
    read_statistics(instance, device, made.pipeline)
}

/// The statistics of each of `pipeline`'s executables, named as the driver names them.
///
/// # Safety
/// As `pipeline_statistics`, `pipeline` made with its statistics captured.
unsafe fn read_statistics(
    instance: &ash::Instance,
    device: &ash::Device,
    pipeline: vk::Pipeline,
) -> Result<Vec<(String, String)>, vk::Result> {
    let ext = ash::khr::pipeline_executable_properties::Device::new(instance, device);
    let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    let executables = ext.get_pipeline_executable_properties(&info)?.len();
    let mut out = Vec::new();
    for index in 0..executables as u32 {
        let info = vk::PipelineExecutableInfoKHR::default()
            .pipeline(pipeline)
            .executable_index(index);
        for s in ext.get_pipeline_executable_statistics(&info)? {
            let name = s.name_as_c_str().unwrap_or_default().to_string_lossy();
            out.push((name.into_owned(), value_of(&s)));
        }
    }
    Ok(out)
}

/// A statistic's value as text, in its own format.
fn value_of(s: &vk::PipelineExecutableStatisticKHR) -> String {
    // SAFETY: the union's member read is the one `format` names.
    unsafe {
        match s.format {
            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => (s.value.b32 != 0).to_string(),
            vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
            vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
            _ => s.value.f64.to_string(),
        }
    }
}
