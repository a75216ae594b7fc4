// A small GPT-2 as Hugging Face's model.safetensors, made in the browser for the tests that load
// GPT-2 into the page (tests/e2e/gpt2.mjs in Chromium, inject_smoke.js in Firefox): one block of
// width 64, 64 positions, GPT-2's 50,257 tokens, its projections' weights [in, out] as
// transformers' Conv1D stores them; norms' weights 1, everything else small seeded noise.
// `leaveOut` names a tensor to leave out (a damaged file). Defines window.tinyGpt2File and
// window.chooseFile.
window.tinyGpt2File = (leaveOut = null) => {
  const [vocab, context, w] = [50257, 64, 64];
  const shapes = { 'wte.weight': [vocab, w], 'wpe.weight': [context, w], 'ln_f.weight': [w], 'ln_f.bias': [w] };
  const block = {
    'ln_1.weight': [w], 'ln_1.bias': [w], 'ln_2.weight': [w], 'ln_2.bias': [w],
    'attn.c_attn.weight': [w, 3 * w], 'attn.c_attn.bias': [3 * w], 'attn.c_proj.weight': [w, w], 'attn.c_proj.bias': [w],
    'mlp.c_fc.weight': [w, 4 * w], 'mlp.c_fc.bias': [4 * w], 'mlp.c_proj.weight': [4 * w, w], 'mlp.c_proj.bias': [w],
  };
  for (const [name, shape] of Object.entries(block)) shapes[`h.0.${name}`] = shape;
  if (leaveOut) delete shapes[leaveOut];
  const header = { __metadata__: { format: 'pt' } };
  const arrays = [];
  let [offset, seed] = [0, 12345];
  const noise = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return (seed / 2147483648 - 0.5) * 0.2; };
  for (const [name, shape] of Object.entries(shapes)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const values = new Float32Array(n);
    const norm = /ln_.*weight/.test(name);
    for (let i = 0; i < n; i++) values[i] = norm ? 1 : noise();
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + 4 * n] };
    offset += 4 * n;
    arrays.push(values);
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const text = new TextEncoder().encode(json);
  const bytes = new Uint8Array(8 + text.length + offset);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(text.length), true);
  bytes.set(text, 8);
  let at = 8 + text.length;
  for (const a of arrays) { bytes.set(new Uint8Array(a.buffer), at); at += a.byteLength; }
  return bytes;
};

// Puts `bytes` in the file input `id` as model.safetensors, as a person choosing it would.
window.chooseFile = (id, bytes) => {
  const files = new DataTransfer();
  files.items.add(new File([bytes], 'model.safetensors'));
  const input = document.getElementById(id);
  input.files = files.files;
  input.dispatchEvent(new Event('change'));
};
