// The causal attention kernels' results in f32 natively (attention_coop_common.wgsl, the
// RESULTS slot): stored from the accumulators by wgpu's cooperative matrices.

//#include attention_results_f32

// Rows of the kernel's f32 results from value `at`, `stride` values apart. The stride is a
// parameter, not computed in the call: naga 30's SPIR-V writer fails on a cooperative
// matrix's pointer or stride computed in its arguments.
fn results_store(acc: Sum, at: u32, stride: u32) {
    coopStoreT(acc, &results[at], stride);
}
