// The causal attention kernels' results in f32 (attention_results_coop.wgsl natively,
// attention_results_chrome.wgsl in Chrome, which give `results_store` in their dialect): the
// output, or the gradients of q, k and v where whatever reads them next reads f32.

alias Result = f32;

// A strip's 16 rows of the head's 64 columns, its accumulators r0..r3 (16 columns each), from
// value `at`, rows `stride` values apart.
fn store_rows(r0: Sum, r1: Sum, r2: Sum, r3: Sum, at: u32, stride: u32, sg: u32, lane: u32) {
    results_store(r0, at, stride);
    results_store(r1, at + 16u, stride);
    results_store(r2, at + 32u, stride);
    results_store(r3, at + 48u, stride);
}

// An infinity at value `at`, for the loss scale to see (attention_coop_dkv.wgsl).
fn store_infinity(at: u32) {
    // Made at run time: an infinity from a constant expression is an error in WGSL.
    var infinity = 0x7f800000u;
    results[at] = bitcast<f32>(infinity);
}
