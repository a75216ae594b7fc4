// Elementwise unary ops: y = f(x). {{EXPR}} is the op's expression in x and the scalar c.
// ELEM is f32, or vec4<f32> on real GPUs where the tensor is whole vec4s (APPLY f4): a thread
// then moves 16 bytes each way, which kept an H100's memory busier (docs/BENCHMARKS.md).
//#slots APPLY ELEM EXPR

struct Params { n: u32, c: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<{{ELEM}}>;
@group(0) @binding(2) var<storage, read_write> ys: array<{{ELEM}}>;

//#include math

fn f(x: f32, c: f32) -> f32 {
    return {{EXPR}};
}

fn f4(x: vec4<f32>, c: f32) -> vec4<f32> {
    return vec4<f32>(f(x.x, c), f(x.y, c), f(x.z, c), f(x.w, c));
}

// p.n counts ELEMs.
@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.n) { return; }
    ys[i] = {{APPLY}}(xs[i], p.c);
}
