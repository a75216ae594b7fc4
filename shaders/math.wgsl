// Shared math helpers, included by the shaders that need them.

// A quiet NaN. Built at run time: browsers reject NaN in constant expressions.
fn nan() -> f32 {
    var bits = 0x7fc00000u;
    return bitcast<f32>(bits);
}

// tanh that stays finite for large |x| (the naive (e^2x - 1) / (e^2x + 1) gives inf / inf).
fn tanh_safe(x: f32) -> f32 {
    let e = exp(-2.0 * abs(x));
    return sign(x) * (1.0 - e) / (1.0 + e);
}

const LN_2: f32 = 0.6931471805599453; // ln 2, for exp2 and log2's gradients

const GELU_K: f32 = 0.7978845608028654; // sqrt(2 / pi)

// GELU, tanh form (PyTorch's approximate='tanh').
fn gelu(x: f32) -> f32 {
    return 0.5 * x * (1.0 + tanh_safe(GELU_K * (x + 0.044715 * x * x * x)));
}

fn gelu_grad(x: f32) -> f32 {
    let t = tanh_safe(GELU_K * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
}

// x^c for real x: negative bases need an integer exponent, else NaN (as in PyTorch).
fn pow_real(x: f32, c: f32) -> f32 {
    if (x >= 0.0) { return pow(x, c); }
    if (c != round(c)) { return nan(); }
    let m = pow(-x, c);
    return select(m, -m, abs(c % 2.0) == 1.0);
}

fn sigmoid(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}
