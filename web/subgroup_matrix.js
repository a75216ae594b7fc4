// Chrome's subgroup matrices (WGSL `chromium_experimental_subgroup_matrix`) multiply f16 on the
// GPU's matrix units, but wgpu's WebGPU backend asks the adapter for neither them nor subgroups.
// `ask_for_matrix_units` makes the next GPUAdapter.requestDevice (wgpu's, made right after it)
// also require them where the adapter offers all that our kernel needs; afterwards
// `matrix_units_lacking` names what was missing ('' when the device has them), for
// src/gpu/subgroup_matrix.rs to turn into a sentence.

const FEATURES = ['shader-f16', 'subgroups', 'chromium-experimental-subgroup-matrix'];
let lacking = 'subgroup-matrix';
let vendor = '';
let described = '';

// The first of the kernel's needs the adapter does not meet, or '': the features, 16 × 16 × 16
// matrices of f16 adding in f32, subgroups always 32 wide (it gives each of a workgroup's 8
// subgroups its own block of C), WGSL's subgroup_id builtin (Chrome requires the matrices'
// offsets to be uniform across a subgroup, and the subgroup's number is) and WGSL's
// buffer_view (the staged tiles are stored as vec4s and read by the matrices as halves).
function first_lacking(adapter) {
  const info = adapter.info ?? {};
  const has = (f) => adapter.features.has(f);
  const sixteens = (info.subgroupMatrixConfigs ?? []).some((c) =>
    c.componentType === 'f16' && c.resultComponentType === 'f32' &&
    c.M === 16 && c.N === 16 && c.K === 16);
  const language = globalThis.navigator?.gpu?.wgslLanguageFeatures;
  if (!has('chromium-experimental-subgroup-matrix')) return 'subgroup-matrix';
  if (!has('shader-f16')) return 'shader-f16';
  if (!has('subgroups')) return 'subgroups';
  if (!sixteens) return 'configuration';
  if (info.subgroupMinSize !== 32 || info.subgroupMaxSize !== 32) return 'subgroup-width';
  if (!language?.has('subgroup_id')) return 'subgroup-id';
  if (!language?.has('buffer_view')) return 'buffer-view';
  return '';
}

export function ask_for_matrix_units() {
  lacking = 'subgroup-matrix';
  if (typeof GPUAdapter === 'undefined') return;
  const original = GPUAdapter.prototype.requestDevice;
  GPUAdapter.prototype.requestDevice = function (descriptor) {
    GPUAdapter.prototype.requestDevice = original;
    const info = this.info ?? {};
    vendor = info.vendor ?? '';
    described = [info.vendor, info.architecture].filter(Boolean).join(' ');
    lacking = first_lacking(this);
    if (lacking !== '') return original.call(this, descriptor);
    const asked = Object.assign({}, descriptor);
    asked.requiredFeatures = [...new Set([...(asked.requiredFeatures ?? []), ...FEATURES])];
    return original.call(this, asked).then(
      (device) => {
        if (!FEATURES.every((f) => device.features.has(f))) lacking = 'refused';
        return device;
      },
      // Refused with them (a browser that lists what it cannot give): the device wgpu asked
      // for, in f32.
      () => {
        lacking = 'refused';
        return original.call(this, descriptor);
      },
    );
  };
}

// '' when the device just opened has the matrix units, else what it lacked: 'subgroup-matrix',
// 'shader-f16', 'subgroups', 'configuration', 'subgroup-width', 'subgroup-id', 'buffer-view'
// or 'refused'.
export function matrix_units_lacking() {
  return lacking;
}

// The adapter's vendor as the browser names it ('nvidia', 'apple', …; often '').
export function adapter_vendor() {
  return vendor;
}

// The adapter's vendor and architecture ('nvidia hopper'), where the browser says them: it
// keeps the adapter's own name private.
export function adapter_described() {
  return described;
}

// Whether the page runs in Chrome (or another Chromium), whose flags the sentences can name.
export function in_chromium() {
  const brands = globalThis.navigator?.userAgentData?.brands ?? [];
  return brands.some((b) => /Chrom/.test(b.brand)) ||
    /Chrome\//.test(globalThis.navigator?.userAgent ?? '');
}
