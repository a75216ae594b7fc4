// Elementwise binary ops with NumPy broadcasting: out[i] = op(a[ia], b[ib]), where ia and ib
// come from the output index through strides that are 0 on broadcast dimensions.
// {{EXPR}} is the op's expression in a and b.
//#slots EXPR

struct Params {
    n: u32,
    rank: u32,
    shape: array<vec4<u32>, 2>,
    sa: array<vec4<u32>, 2>,
    sb: array<vec4<u32>, 2>,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> xa: array<f32>;
@group(0) @binding(2) var<storage, read> xb: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

fn op(a: f32, b: f32) -> f32 {
    return {{EXPR}};
}

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.n) { return; }
    var rem = i;
    var ia = 0u;
    var ib = 0u;
    // The outermost coordinate is what remains: no division for it (and none at all for a
    // flat walk), since integer division is slow on CPU-emulated adapters.
    for (var d = i32(p.rank) - 1; d > 0; d--) {
        let size = p.shape[d / 4][d % 4];
        let coord = rem % size;
        rem = rem / size;
        ia += coord * p.sa[d / 4][d % 4];
        ib += coord * p.sb[d / 4][d % 4];
    }
    ia += rem * p.sa[0].x;
    ib += rem * p.sb[0].x;
    out[i] = op(xa[ia], xb[ib]);
}
