// Elementwise unary ops: y = f(x). {{EXPR}} is the op's expression in x and the scalar c.

struct Params { n: u32, c: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read_write> ys: array<f32>;

//#include math

fn f(x: f32, c: f32) -> f32 {
    return {{EXPR}};
}

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.n) { return; }
    ys[i] = f(xs[i], p.c);
}
