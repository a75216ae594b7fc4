// Split-K's second pass (src/ops/matmul_split.rs): C = the sum of the partial products of the
// K chunks (+ a bias per column) (+ a residual of C's shape) (through ReLU, with RELU) (kept
// where the ReLU output bound as the residual is positive, with RELU_GRAD; one of these three
// at most, src/ops/matmul_plan.rs `Epilogue::check`). The partials are
// [batches × parts, m, n], each batch's parts side by side; a thread per element of C. Without
// a bias or a residual their bindings hold any buffer and are not read. ELEM is f32, or
// vec4<f32> where C's rows are a multiple of 4 long; n and len count ELEMs.
//#slots ELEM

struct Params { m: u32, n: u32, parts: u32, len: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> partial: array<{{ELEM}}>;
@group(0) @binding(2) var<storage, read> bias: array<{{ELEM}}>;
@group(0) @binding(3) var<storage, read> residual: array<{{ELEM}}>;
@group(0) @binding(4) var<storage, read_write> c: array<{{ELEM}}>;

override HAS_BIAS: bool;
override HAS_RESIDUAL: bool;
override RELU: bool;
override RELU_GRAD: bool;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.len) { return; }
    let size = p.m * p.n;
    let within = i % size;
    let first = (i / size) * p.parts * size + within;
    // Four parts an iteration, in two sums, so that loads overlap (one at a time, each waited
    // for, and each iteration counted by the loop bound the WGSL compilers add).
    var sum = {{ELEM}}(0.0);
    var other = {{ELEM}}(0.0);
    var s = 0u;
    for (; s + 3u < p.parts; s += 4u) {
        sum += partial[first + s * size] + partial[first + (s + 1u) * size];
        other += partial[first + (s + 2u) * size] + partial[first + (s + 3u) * size];
    }
    for (; s < p.parts; s++) {
        sum += partial[first + s * size];
    }
    sum += other;
    if (HAS_BIAS) { sum += bias[within % p.n]; }
    if (HAS_RESIDUAL) { sum += residual[i]; }
    if (RELU) { sum = max(sum, {{ELEM}}(0.0)); }
    if (RELU_GRAD) { sum = select({{ELEM}}(0.0), sum, residual[i] > {{ELEM}}(0.0)); }
    c[i] = sum;
}
