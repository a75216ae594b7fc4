// The loss scale of mixed precision (src/optim/loss_scale.rs), as PyTorch's GradScaler keeps
// it, on the GPU so that nothing is read back: one invocation reads the squared norm of the
// gradients of a loss multiplied by `scale`, writes what the update kernels read (`guide`: the
// norm of the unscaled gradients, the factor that unscales them, whether the step is skipped,
// the norm being infinite or NaN, and the steps skipped before it), then halves the scale after
// a skipped step and doubles it after `growth_interval` clean ones. Unlike GradScaler's, the
// scale stays within [1, 2^24]: gradients that are NaN for another cause (a diverging run,
// which the session's guard catches) do not drive it to 0, nor clean ones past f16's use.

struct Params {
    growth_interval: u32,
}
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> norm_sq: array<f32>;
@group(0) @binding(2) var<storage, read_write> scale: array<f32>;
// Clean steps since the scale last changed, and the steps skipped in all.
@group(0) @binding(3) var<storage, read_write> counts: array<u32>;
@group(0) @binding(4) var<storage, read_write> guide: array<f32>;

// The largest finite f32: NaN compares false with it too.
const FINITE_MAX: f32 = 0x1.fffffep+127f;

@compute @workgroup_size(1)
fn main() {
    let s = scale[0];
    let inv = 1.0 / s;
    let n = norm_sq[0];
    let finite = n <= FINITE_MAX;
    guide[0] = select(0.0, n * inv * inv, finite);
    guide[1] = inv;
    guide[2] = select(1.0, 0.0, finite);
    guide[3] = f32(counts[1]);
    if (!finite) {
        scale[0] = max(s * 0.5, 1.0);
        counts[0] = 0u;
        counts[1] = counts[1] + 1u;
        return;
    }
    counts[0] = counts[0] + 1u;
    if (counts[0] >= p.growth_interval) {
        scale[0] = min(s * 2.0, 16777216.0);
        counts[0] = 0u;
    }
}
