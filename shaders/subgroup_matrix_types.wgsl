enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;

// Chrome's subgroup matrices of 16 × 16 (`chromium-experimental-subgroup-matrix`, which wgpu's
// WebGPU backend does not ask for: src/gpu/subgroup_matrix.rs asks for it), as the kernels in
// Chrome's dialect name them: f16 operands, f32 sums.
alias Left = subgroup_matrix_left<f16, 16, 16>;
alias Right = subgroup_matrix_right<f16, 16, 16>;
alias Sum = subgroup_matrix_result<f32, 16, 16>;
