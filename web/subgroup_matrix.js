// Chrome's subgroup matrices (WGSL `chromium_experimental_subgroup_matrix`) multiply f16 on the
// GPU's matrix units, but wgpu's WebGPU backend asks the adapter for neither them nor subgroups.
// `ask_for_matrix_units` makes the next GPUAdapter.requestDevice (wgpu's, made right after it)
// also require them where the adapter offers all that our kernel needs; `matrix_units_granted`
// says afterwards whether the device has them (src/gpu/subgroup_matrix.rs).

const FEATURES = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'];
let granted = false;

// The kernel's needs: the features, 16 × 16 × 16 matrices of f16 adding in f32, and subgroups
// always 32 wide (it gives each of a workgroup's 8 subgroups its own block of C).
function offers_matrix_units(adapter) {
  const info = adapter.info ?? {};
  const sixteens = (info.subgroupMatrixConfigs ?? []).some((c) =>
    c.componentType === 'f16' && c.resultComponentType === 'f32' &&
    c.M === 16 && c.N === 16 && c.K === 16);
  return FEATURES.every((f) => adapter.features.has(f)) && sixteens &&
    info.subgroupMinSize === 32 && info.subgroupMaxSize === 32;
}

export function ask_for_matrix_units() {
  granted = false;
  if (typeof GPUAdapter === 'undefined') return;
  const original = GPUAdapter.prototype.requestDevice;
  GPUAdapter.prototype.requestDevice = function (descriptor) {
    GPUAdapter.prototype.requestDevice = original;
    if (!offers_matrix_units(this)) return original.call(this, descriptor);
    const asked = Object.assign({}, descriptor);
    asked.requiredFeatures = [...new Set([...(asked.requiredFeatures ?? []), ...FEATURES])];
    return original.call(this, asked).then(
      (device) => {
        granted = FEATURES.every((f) => device.features.has(f));
        return device;
      },
      // Refused with them (a browser that lists what it cannot give): the device wgpu asked
      // for, in f32.
      () => original.call(this, descriptor),
    );
  };
}

export function matrix_units_granted() {
  return granted;
}
