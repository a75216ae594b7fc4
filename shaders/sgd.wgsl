// One fused SGD step over a parameter, in place, as torch.optim.SGD computes it: weight decay,
// momentum (the buffer starts as the first gradient), optionally Nesterov, and clipping as in
// adam.wgsl.

struct Params {
    n: u32,
    lr: f32,
    momentum: f32,
    weight_decay: f32,
    nesterov: u32,
    first_step: u32,
    max_norm: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
// The squared norm of all gradients; with SCALED, what shaders/loss_scale.wgsl wrote: that
// norm unscaled, the factor that unscales the gradients, 1 where the step is skipped, and the
// steps skipped before this one (a skipped first step leaves the momentum buffer at zero, which
// the next step's `first_step` fills as a first step would).
@group(0) @binding(2) var<storage, read> norm_sq: array<f32>;
override SCALED: bool;
@group(0) @binding(3) var<storage, read_write> param: array<f32>;
@group(0) @binding(4) var<storage, read_write> buf: array<f32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.n) { return; }
    if (SCALED && norm_sq[2] != 0.0) { return; }
    let clip = min(1.0, p.max_norm / (sqrt(norm_sq[0]) + 1e-6));
    var unscale = 1.0;
    if (SCALED) { unscale = norm_sq[1]; }
    var g = grad[i] * unscale * clip + p.weight_decay * param[i];
    if (p.momentum != 0.0) {
        let b = select(p.momentum * buf[i] + g, g, p.first_step != 0u);
        buf[i] = b;
        g = select(b, g + p.momentum * b, p.nesterov != 0u);
    }
    param[i] = param[i] - p.lr * g;
}
