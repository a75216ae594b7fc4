// One fused Adam / AdamW step over a parameter, in place, as torch.optim.Adam(W) computes it.
// The gradient is first scaled by the clipping factor min(1, max_norm / (‖g‖ + 1e-6)), where
// ‖g‖² over all parameters was summed on the GPU into `norm_sq`.

struct Params {
    n: u32,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    bias_correction1: f32,
    bias_correction2: f32,
    decoupled: u32,
    max_norm: f32,
    // The step, from 1, counting skipped ones (with SCALED the kernel takes those away).
    step: f32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> grad: array<f32>;
// The squared norm of all gradients; with SCALED, what shaders/loss_scale.wgsl wrote: that
// norm unscaled, the factor that unscales the gradients, 1 where the step is skipped, and the
// steps skipped before this one.
@group(0) @binding(2) var<storage, read> norm_sq: array<f32>;
override SCALED: bool;
@group(0) @binding(3) var<storage, read_write> param: array<f32>;
@group(0) @binding(4) var<storage, read_write> m: array<f32>;
@group(0) @binding(5) var<storage, read_write> v: array<f32>;

@compute @workgroup_size(ELEMENTWISE_WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * ELEMENTWISE_WORKGROUP;
    if (i >= p.n) { return; }
    if (SCALED && norm_sq[2] != 0.0) { return; }
    let clip = min(1.0, p.max_norm / (sqrt(norm_sq[0]) + 1e-6));
    var unscale = 1.0;
    if (SCALED) { unscale = norm_sq[1]; }
    var g = grad[i] * unscale * clip;
    var w = param[i];
    if (p.decoupled != 0u) {
        w = w * (1.0 - p.lr * p.weight_decay);
    } else {
        g = g + p.weight_decay * w;
    }
    let mi = p.beta1 * m[i] + (1.0 - p.beta1) * g;
    let vi = p.beta2 * v[i] + (1.0 - p.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    // A step the loss scale skipped is not one of Adam's, as PyTorch's GradScaler skips
    // optimizer.step(): after one, the bias corrections count the updates made. Worked out here
    // only then: pow's 1 - 0.999^t at small t is some 1e-4 off the host's.
    var correction1 = p.bias_correction1;
    var correction2 = p.bias_correction2;
    if (SCALED && norm_sq[3] > 0.0) {
        let t = p.step - norm_sq[3];
        correction1 = 1.0 - pow(p.beta1, t);
        correction2 = 1.0 - pow(p.beta2, t);
    }
    let denom = sqrt(vi) / sqrt(correction2) + p.eps;
    param[i] = w - (p.lr / correction1) * mi / denom;
}
