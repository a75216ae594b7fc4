// The causal attention kernels' results in f32 in Chrome (attention_coop_common.wgsl, the
// RESULTS slot): stored from the accumulators by its subgroup matrices.

//#include attention_results_f32

// Rows of the kernel's f32 results from value `at`, `stride` values apart.
fn results_store(acc: Sum, at: u32, stride: u32) {
    subgroupMatrixStore<row_major>(&results, at, acc, stride);
}
