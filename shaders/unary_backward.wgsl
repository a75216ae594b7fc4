// Backward of elementwise unary ops: dx = df(x, y, g). {{GRAD}} is an expression in x, the
// output y, the incoming gradient g and the scalar c.
//#slots GRAD

struct Params { n: u32, c: f32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read> ys: array<f32>;
@group(0) @binding(3) var<storage, read> gs: array<f32>;
@group(0) @binding(4) var<storage, read_write> dxs: array<f32>;

//#include math

fn df(x: f32, y: f32, g: f32, c: f32) -> f32 {
    return {{GRAD}};
}

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.n) { return; }
    dxs[i] = df(xs[i], ys[i], gs[i], p.c);
}
