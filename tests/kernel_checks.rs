//! The typed launch path: a kernel whose template text, parameter struct, bindings or
//! override constants do not fit its WGSL is refused when its pipeline is built, with an
//! error naming the kernel, before anything reaches the GPU.
#![cfg(not(target_arch = "wasm32"))]

mod common;
use common::run;
use std::rc::Rc;
use webgrad::gpu::{Binding, BufferRef, Gpu, Kernel, NoParams};
use webgrad::{Device, Error, Tensor};

webgrad::kernel_params! {
    /// What the test shader below declares.
    struct ScaleParams { n: u32, factor: f32 }
}

webgrad::kernel_params! {
    /// The same fields in the other order.
    struct SwappedParams { factor: f32, n: u32 }
}

webgrad::kernel_params! {
    /// One field short.
    struct ShortParams { n: u32 }
}

const SCALE: &str = "
struct Params { n: u32, factor: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
override NEGATE: bool;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < p.n) { y[gid.x] = select(1.0, -1.0, NEGATE) * p.factor * x[gid.x]; }
}
";

async fn gpu() -> Rc<Gpu> {
    match common::gpu().await {
        Device::Gpu(gpu) => gpu,
        Device::Cpu => panic!("the tests need a GPU adapter"),
    }
}

/// Two tensors of 4 zeros, and their buffers to bind (the tensors keep them).
fn x_and_y(gpu: &Rc<Gpu>) -> ([Tensor; 2], [BufferRef; 2]) {
    let device = Device::Gpu(gpu.clone());
    let xy = [(); 2].map(|_| Tensor::zeros(&[4], &device).unwrap());
    let buffers = [0, 1].map(|i| xy[i].buffer("test").unwrap());
    (xy, buffers)
}

/// The error of dispatching `kernel` with `params` and `bindings`; panics if it was accepted.
fn refusal<P: webgrad::gpu::KernelParams>(
    gpu: &Rc<Gpu>,
    kernel: &Kernel,
    params: &P,
    bindings: &[Binding],
) -> String {
    let before = gpu.counters().dispatches;
    let err = gpu
        .dispatch(kernel, params, bindings, [1, 1, 1])
        .expect_err("a mismatched launch must be refused");
    assert!(
        matches!(&err, Error::Kernel { kernel, .. } if kernel == "scale_test:main"),
        "{err}"
    );
    assert_eq!(gpu.counters().dispatches, before, "nothing was recorded");
    err.to_string()
}

#[test]
fn a_kernel_that_fits_its_shader_runs() {
    run(async {
        let gpu = gpu().await;
        let device = Device::Gpu(gpu.clone());
        let x = Tensor::from_vec(vec![1.0, -2.0, 3.0], &[3], &device).unwrap();
        let y = Tensor::zeros(&[3], &device).unwrap();
        let (xb, yb) = (x.buffer("test").unwrap(), y.buffer("test").unwrap());
        let kernel = Kernel::new("scale_test", SCALE, "main").constant("NEGATE", true);
        let params = ScaleParams { n: 3, factor: 2.0 };
        let bindings = [Binding::read(&xb), Binding::write(&yb)];
        gpu.dispatch(&kernel, &params, &bindings, [1, 1, 1])
            .unwrap();
        assert_eq!(y.to_vec().await.unwrap(), [-2.0, 4.0, -6.0]);
        assert!(gpu.take_errors().is_empty());
    });
}

#[test]
fn a_parameter_struct_unlike_the_shaders_is_refused() {
    run(async {
        let gpu = gpu().await;
        let (_xy, [xb, yb]) = x_and_y(&gpu);
        let bindings = [Binding::read(&xb), Binding::write(&yb)];
        let kernel = Kernel::new("scale_test", SCALE, "main").constant("NEGATE", false);
        let swapped = SwappedParams { factor: 1.0, n: 4 };
        let why = refusal(&gpu, &kernel, &swapped, &bindings);
        assert!(why.contains("factor: f32 @0"), "{why}");
        let why = refusal(&gpu, &kernel, &ShortParams { n: 4 }, &bindings);
        assert!(
            why.contains("struct Params has [n: u32 @0, factor: f32 @4]"),
            "{why}"
        );
        let why = refusal(&gpu, &kernel, &NoParams {}, &bindings);
        assert!(why.contains("parameter struct has fields []"), "{why}");
        assert!(gpu.take_errors().is_empty(), "nothing reached the GPU");
    });
}

#[test]
fn bindings_or_constants_unlike_the_shaders_are_refused() {
    run(async {
        let gpu = gpu().await;
        let (_xy, [xb, yb]) = x_and_y(&gpu);
        let params = ScaleParams { n: 4, factor: 1.0 };
        let kernel = Kernel::new("scale_test", SCALE, "main").constant("NEGATE", false);
        let read_only = [Binding::read(&xb), Binding::read(&yb)];
        let why = refusal(&gpu, &kernel, &params, &read_only);
        assert!(why.contains("binding 2 (`y`) is read_write"), "{why}");
        let why = refusal(&gpu, &kernel, &params, &[Binding::read(&xb)]);
        assert!(why.contains("declares 2 storage bindings (x, y)"), "{why}");
        let full = [Binding::read(&xb), Binding::write(&yb)];
        let unset = Kernel::new("scale_test", SCALE, "main");
        let why = refusal(&gpu, &unset, &params, &full);
        assert!(why.contains("`override NEGATE` was not given"), "{why}");
        let misspelt = unset.constant("NEGATED", true);
        let why = refusal(&gpu, &misspelt, &params, &full);
        assert!(why.contains("no `override NEGATED`"), "{why}");
        assert!(gpu.take_errors().is_empty(), "nothing reached the GPU");
    });
}

/// A misspelt slot or include, or a slot the shader does not declare, is refused with the
/// kernel's name before the GPU compiles it.
#[test]
fn template_text_left_in_a_kernel_is_an_error_naming_it() {
    run(async {
        let gpu = gpu().await;
        let main = "@compute @workgroup_size(1) fn main() {}";
        let cases = [
            (
                format!("//#slots M N\nconst N: u32 = {{{{N}}}}u;\n{main}"),
                "left unexpanded",
            ),
            (
                format!("//#slots M\n//#include nothing_by_this_name\n{main}"),
                "left unexpanded",
            ),
            (
                format!("//#slots N\n{main}"),
                "the slot M is not one the shader takes",
            ),
        ];
        let before = gpu.counters().dispatches;
        for (source, why) in cases {
            let source: &'static str = Box::leak(source.into_boxed_str());
            let kernel = Kernel::new("bad_kernel", source, "main").slot("M", 4usize);
            let err = gpu
                .dispatch(&kernel, &NoParams {}, &[], [1, 1, 1])
                .unwrap_err();
            assert!(matches!(&err, Error::Kernel { kernel, .. } if kernel == "bad_kernel:main"));
            assert!(err.to_string().contains(why), "{err}");
        }
        assert!(gpu.take_errors().is_empty(), "nothing reached the GPU");
        assert_eq!(gpu.counters().dispatches, before);
    });
}
