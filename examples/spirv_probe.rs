//! Times one 4096² product kernel natively as two WGSL compilers built it: the WGSL through
//! naga (wgpu's own path, as the native build runs it) and SPIR-V that Chrome's Tint wrote for
//! the same WGSL (from Dawn's `dump_shaders` log), passed through to the driver. Each result is
//! checked against a few products computed on the CPU.
//!
//! cargo run --release --example spirv_probe -- KERNEL.wgsl OVERRIDES NAME=FILE.spv...
//! (OVERRIDES as "TA=0,TB=0"; PROBE_N=256 for a small product on an emulated GPU;
//! PROBE_ROWS for A and C of that many rows; PROBE_DYNAMIC=1 for the parameters at a dynamic
//! offset; PROBE_SUBGROUPS=1 to create every pipeline as
//! Dawn does on a device with subgroup size control: wgpu then sets
//! ALLOW_VARYING_SUBGROUP_SIZE on each compute stage). The WGSL
//! and the SPIR-V come from `tools/extract_spirv.py` over Chrome's log (docs/BENCHMARKS.md,
//! "Chrome's product code run natively"). Native only: it passes SPIR-V to Vulkan.

#![cfg_attr(target_arch = "wasm32", allow(dead_code, unused_imports))]

use std::borrow::Cow;
use std::time::Instant;

/// The product's side: 4096, or PROBE_N (a small one to try the probe on an emulated GPU).
fn side() -> u32 {
    std::env::var("PROBE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096)
}
/// Rows of A and C: the side, or PROBE_ROWS (a multiple of 128), so that the number of tiles
/// can be stepped finely (16 a row of tiles at side 2048) to see how many run at once.
fn rows() -> u32 {
    std::env::var("PROBE_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(side)
}
/// PROBE_DYNAMIC=1 binds the parameters at a dynamic offset, as the library does.
fn dynamic() -> bool {
    std::env::var("PROBE_DYNAMIC").is_ok_and(|v| v == "1")
}
const REPEATS: usize = 20;

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let wgsl = std::fs::read_to_string(&args[1]).expect("the WGSL file");
    let overrides: Vec<(String, f64)> = args[2]
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').expect("NAME=VALUE");
            (k.to_string(), v.parse().expect("a number"))
        })
        .collect();
    let spirv: Vec<(String, Vec<u32>)> = args[3..]
        .iter()
        .map(|a| {
            let (name, path) = a.split_once('=').expect("NAME=FILE.spv");
            let bytes = std::fs::read(path).expect("the SPIR-V file");
            (name.to_string(), bytemuck::pod_collect_to_vec(&bytes))
        })
        .collect();
    pollster::block_on(run(&wgsl, &overrides, &spirv));
}

/// shaders/matmul_out.wgsl's Params for one dense n × n product, A and B not transposed, as
/// the 256 bytes of a kernel's parameter window.
#[rustfmt::skip]
fn params() -> Vec<u32> {
    let (m, n) = (rows(), side());
    let mut words = vec![
        m, n, n, 0, 0, n, 1, 1,                  // m n k a_batch b_batch k_chunk parts heads
        0, m * n, n,                             // A: offset, head stride, row stride
        0, n * n, n,                             // B: the same
        0, m * n, m * n, n,                      // C: offset, batch, head and row strides
        0, 0, 0f32.to_bits(), 1f32.to_bits(),    // sums_offset drop_seed drop_p drop_scale
    ];
    words.resize(64, 0);
    words
}

/// A device that takes SPIR-V as it is.
async fn open_device() -> (wgpu::Device, wgpu::Queue) {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions::default())
        .await
        .expect("an adapter");
    println!("adapter: {}", adapter.get_info().name);
    let mut features = wgpu::Features::PASSTHROUGH_SHADERS;
    if std::env::var("PROBE_SUBGROUPS").is_ok_and(|v| v == "1") {
        features |= wgpu::Features::SUBGROUP;
    }
    println!("features: {features:?}");
    adapter
        .request_device(&wgpu::DeviceDescriptor {
            required_features: features,
            required_limits: adapter.limits(),
            ..Default::default()
        })
        .await
        .expect("a device")
}

/// A and B (fixed values), C, the parameters, and the group binding them as the kernel does:
/// the parameters at 0, A and B at 1 and 2, C at 3.
struct Operands {
    a: Vec<f32>,
    b: Vec<f32>,
    c: wgpu::Buffer,
    layout: wgpu::BindGroupLayout,
    group: wgpu::BindGroup,
}

fn operands(device: &wgpu::Device, queue: &wgpu::Queue) -> Operands {
    let elems = (side() * side()) as usize;
    let a_elems = (rows() * side()) as usize;
    let a: Vec<f32> = (0..a_elems)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 1000.0)
        .collect();
    let b: Vec<f32> = (0..elems)
        .map(|i| ((i * 104729 % 997) as f32 - 498.0) / 997.0)
        .collect();
    let storage =
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
    let buffer = |data: &[u8], usage| {
        let buf = device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: data.len() as u64,
            usage,
            mapped_at_creation: false,
        });
        queue.write_buffer(&buf, 0, data);
        buf
    };
    let uniform_usage = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
    let buffers = [
        buffer(bytemuck::cast_slice(&params()), uniform_usage),
        buffer(bytemuck::cast_slice(&a), storage),
        buffer(bytemuck::cast_slice(&b), storage),
        buffer(&vec![0u8; a_elems * 4], storage),
    ];
    let kinds = [
        wgpu::BufferBindingType::Uniform,
        wgpu::BufferBindingType::Storage { read_only: true },
        wgpu::BufferBindingType::Storage { read_only: true },
        wgpu::BufferBindingType::Storage { read_only: false },
    ];
    let entries: Vec<wgpu::BindGroupLayoutEntry> = (0u32..)
        .zip(kinds)
        .map(|(binding, ty)| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: binding == 0 && dynamic(),
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &entries,
    });
    let bound: Vec<wgpu::BindGroupEntry> = (0u32..)
        .zip(&buffers)
        .map(|(binding, buf)| wgpu::BindGroupEntry {
            binding,
            resource: buf.as_entire_binding(),
        })
        .collect();
    let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &layout,
        entries: &bound,
    });
    let [_, _, _, c] = buffers;
    Operands {
        a,
        b,
        c,
        layout,
        group,
    }
}

/// The product's pipelines by name: the WGSL through naga with `overrides`, then each SPIR-V
/// module passed through.
fn pipelines(
    device: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    (wgsl, overrides): (&str, &[(String, f64)]),
    spirv: &[(String, Vec<u32>)],
) -> Vec<(String, wgpu::ComputePipeline)> {
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(layout)],
        immediate_size: 0,
    });
    let pipeline = |module: &wgpu::ShaderModule, entry: &str, constants: &[(&str, f64)]| {
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: Some(&pipeline_layout),
            module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants,
                ..Default::default()
            },
            cache: None,
        })
    };
    let constants: Vec<(&str, f64)> = overrides.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let naga_module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("naga"),
        source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(wgsl)),
    });
    let mut all = vec![(
        "naga".to_string(),
        pipeline(&naga_module, "main", &constants),
    )];
    for (name, words) in spirv {
        let entry = entry_point_name(words);
        // Safety: a probe on our own kernels; the results are checked against the CPU.
        let module = unsafe {
            device.create_shader_module_passthrough(wgpu::ShaderModuleDescriptorPassthrough {
                label: Some(name),
                entry_points: Cow::Owned(vec![wgpu::PassthroughShaderEntryPoint {
                    name: Cow::Owned(entry.clone()),
                    workgroup_size: (16, 16, 1),
                }]),
                spirv: Some(Cow::Borrowed(words)),
                ..Default::default()
            })
        };
        all.push((name.clone(), pipeline(&module, &entry, &[])));
    }
    all
}

async fn run(wgsl: &str, overrides: &[(String, f64)], spirv: &[(String, Vec<u32>)]) {
    let (device, queue) = open_device().await;
    let ops = operands(&device, &queue);
    let pipelines = pipelines(&device, &ops.layout, (wgsl, overrides), spirv);
    let want = cpu_samples(&ops.a, &ops.b);
    for round in 0..3 {
        for (name, pipeline) in &pipelines {
            let ms = time(&device, &queue, pipeline, &ops.group);
            let flops = 2.0 * rows() as f64 * (side() as f64).powi(2) / (ms * 1e-3) / 1e12;
            let err = check(&device, &queue, &ops.c, &want).await;
            println!("round {round} {name}: {ms:.3} ms a product, {flops:.1} TFLOPS, max error {err:.2e}");
        }
    }
}

/// The name of the SPIR-V module's first entry point.
fn entry_point_name(words: &[u32]) -> String {
    let mut i = 5;
    while i < words.len() {
        let (count, op) = ((words[i] >> 16) as usize, words[i] & 0xffff);
        if op == 15 {
            // OpEntryPoint: model, id, then the name as a nul-terminated string.
            let bytes: Vec<u8> = bytemuck::cast_slice(&words[i + 3..i + count]).to_vec();
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            return String::from_utf8_lossy(&bytes[..end]).into_owned();
        }
        i += count.max(1);
    }
    panic!("no entry point in the SPIR-V")
}

/// ms per product: REPEATS dispatches in one submit, after one to warm up.
fn time(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    p: &wgpu::ComputePipeline,
    g: &wgpu::BindGroup,
) -> f64 {
    let submit = |count: usize| {
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(p);
            pass.set_bind_group(0, g, if dynamic() { &[0] } else { &[] });
            for _ in 0..count {
                pass.dispatch_workgroups(side() / 128, rows() / 128, 1);
            }
        }
        queue.submit([encoder.finish()]);
        device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    };
    submit(2);
    let start = Instant::now();
    submit(REPEATS);
    start.elapsed().as_secs_f64() * 1e3 / REPEATS as f64
}

/// C[i, j] for a few (i, j) spread over the matrix, in f64.
fn cpu_samples(a: &[f32], b: &[f32]) -> Vec<(usize, f64)> {
    let (m, n) = (rows() as usize, side() as usize);
    (0..16)
        .map(|s| {
            let (i, j) = ((s * 977) % m, (s * 2741 + 5) % n);
            let v = (0..n)
                .map(|k| a[i * n + k] as f64 * b[k * n + j] as f64)
                .sum();
            (i * n + j, v)
        })
        .collect()
}

/// The largest error of C at the sampled places; C is zeroed after, so that the next
/// kernel's result is its own.
async fn check(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    c: &wgpu::Buffer,
    want: &[(usize, f64)],
) -> f64 {
    let size = c.size();
    let read = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(c, 0, &read, 0, size);
    queue.submit([encoder.finish()]);
    read.slice(..).map_async(wgpu::MapMode::Read, |_| {});
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let data = read.slice(..).get_mapped_range().expect("mapped");
    let got: &[f32] = bytemuck::cast_slice(&data);
    let err = want
        .iter()
        .map(|&(at, v)| (got[at] as f64 - v).abs())
        .fold(0.0, f64::max);
    drop(data);
    queue.write_buffer(c, 0, &vec![0u8; size as usize]);
    err
}
