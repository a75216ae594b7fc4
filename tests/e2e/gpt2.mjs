// GPT-2 in the page: Hugging Face's model.safetensors of a small GPT-2 (one block of width 64,
// GPT-2's 50,257 tokens, random weights, made here in its layout) loaded through the GPT-2
// control becomes a LoRA run on the page's text; it samples through GPT-2's tokenizer, trains,
// and its adapters and merged model download as the files PEFT and transformers read; Fine-tune
// starts again from it on another text. A damaged GPT-2 file is refused with its reason beside
// the control.

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const VOCAB = 50257;

// A tiny GPT-2's model.safetensors (without `leaveOut`, where given), made by the script the
// Firefox test runs in its page (tools/browser/gpt2_file.js), run here.
function gpt2File(leaveOut = null) {
  const source = readFileSync(fileURLToPath(new URL('../../tools/browser/gpt2_file.js', import.meta.url)), 'utf8');
  const window = {};
  vm.runInNewContext(source, { window, TextEncoder });
  return Buffer.from(window.tinyGpt2File(leaveOut));
}

// Loads `bytes` through the GPT-2 control, as a person choosing the file would.
const chooseGpt2 = (page, bytes) => page.setInputFiles('#gpt2-file', { name: 'model.safetensors', mimeType: 'application/octet-stream', buffer: bytes });

const header = (path) => {
  const bytes = readFileSync(path);
  const length = Number(bytes.readBigUInt64LE(0));
  return JSON.parse(bytes.subarray(8, 8 + length).toString('utf8'));
};

// Clicks `id` and takes the two downloads it starts: the weights and the settings beside them.
async function downloads(page, id) {
  const files = [];
  const taken = new Promise((done) => {
    const on = async (d) => { files.push({ name: d.suggestedFilename(), path: await d.path() }); if (files.length === 2) { page.off('download', on); done(); } };
    page.on('download', on);
  });
  await page.click(`#${id}`);
  await Promise.race([taken, page.waitForTimeout(60000)]);
  return files;
}

export async function gpt2InThePage({ page, state, fail }, out) {
  // A damaged file: its reason beside the control, and the run as it was.
  await chooseGpt2(page, gpt2File('wpe.weight'));
  await page.waitForFunction(() => (window.webgrad.state().error || '').includes('wpe.weight is missing'), null, { timeout: 60000 })
    .catch(() => fail('gpt2: no sentence for a GPT-2 file without wpe.weight'));
  const beside = await page.textContent('#gpt2-file-hint').catch(() => '');
  if (!beside.includes('wpe.weight is missing')) await fail(`gpt2: no sentence beside the GPT-2 control: "${beside}"`);

  await chooseGpt2(page, gpt2File());
  await page.waitForFunction(() => { const s = window.webgrad.state(); return s.lora_rank === 8 && s.task === 'text' && s.step === 0 && s.val_loss != null && !s.error; }, null, { timeout: 180000 })
    .catch(() => fail('gpt2: loading the file made no LoRA run of rank 8'));
  const loaded = await state();
  if (!(await page.isVisible('#lora-before')) || (await page.textContent('#lora-before')).length < 20) await fail('gpt2: no sample of GPT-2 before fine-tuning kept beside the new ones');
  if (!(loaded.note || '').startsWith('GPT-2 loaded')) await fail(`gpt2: no sentence saying GPT-2 loaded: "${loaded.note}"`);
  // Random weights over GPT-2's 50,257 tokens: a loss near ln(50,257) = 10.8.
  if (!(loaded.val_loss > 9 && loaded.val_loss < 12)) await fail(`gpt2: a first validation loss of ${loaded.val_loss}`);
  // Its size counts the frozen weights: 50,257 × 64 of them in the token embedding alone.
  if (!(loaded.note || '').includes('a 3.3 M-parameter model')) await fail(`gpt2: the note does not give the model's size: "${loaded.note}"`);
  const summary = (await page.textContent('#model-summary')).replace(/\s+/g, ' ');
  if (!summary.includes('blocks.0.attn.qkv.lora_A')) await fail(`gpt2: the summary does not list the adapters: ${summary.slice(0, 200)}`);

  await page.click('#sample');
  await page.waitForFunction(() => Array.from(document.querySelectorAll('#sample-out .sample'))
    .find((b) => b.querySelector('.at').textContent.endsWith('(Sample)'))?.querySelectorAll('span.c').length >= 10, null, { timeout: 180000 })
    .catch(() => fail('gpt2: no sample appeared'));

  await page.evaluate(() => window.webgrad.train());
  await page.waitForFunction(() => window.webgrad.state().step >= 3, null, { timeout: 300000, polling: 250 })
    .catch(() => fail('gpt2: Train did not fine-tune'));
  await page.evaluate(() => window.webgrad.pause());
  console.log(`gpt2: loaded, sampled, and fine-tuned to step ${(await state()).step} (validation ${loaded.val_loss.toFixed(3)} at step 0)`);

  const adapters = await downloads(page, 'lora-adapters');
  const names = adapters.map((f) => f.name).sort().join(', ');
  if (names !== 'adapter_config.json, adapter_model.safetensors') await fail(`gpt2: the adapters downloaded as ${names}`);
  const weights = adapters.find((f) => f.name === 'adapter_model.safetensors');
  if (weights && !('base_model.model.transformer.h.0.attn.c_attn.lora_A.weight' in header(weights.path))) await fail('gpt2: the adapters lack PEFT\'s names for GPT-2');
  const config = adapters.find((f) => f.name === 'adapter_config.json');
  if (config && JSON.parse(readFileSync(config.path, 'utf8')).fan_in_fan_out !== true) await fail('gpt2: adapter_config.json is not fan-in-fan-out');
  const merged = await downloads(page, 'lora-merged');
  const model = merged.find((f) => f.name === 'model.safetensors');
  const json = merged.find((f) => f.name === 'config.json');
  if (!model || !json) await fail(`gpt2: the merged model downloaded as ${merged.map((f) => f.name).join(', ')}`);
  const tensors = Object.keys(header(model.path));
  if (!(tensors.includes('h.0.attn.c_attn.weight') && tensors.includes('wte.weight') && !tensors.some((n) => n.includes('lora')))) await fail(`gpt2: the merged model holds ${tensors.join(', ')}`);
  if (JSON.parse(readFileSync(json.path, 'utf8')).vocab_size !== VOCAB) await fail('gpt2: config.json lacks the vocabulary');
  // Fine-tune starts again from the same GPT-2 on the text in the box, with the text it was
  // loaded on as the second curve and a sample from before kept.
  await page.fill('#user-text', 'The cat sat on the mat, and the dog sat on the log. '.repeat(200));
  await page.selectOption('#lora-rank', '4');
  await page.click('#lora-start');
  await page.waitForFunction(() => { const s = window.webgrad.state(); return s.lora_rank === 4 && s.val_loss != null && s.base_loss != null && !s.error; }, null, { timeout: 180000 })
    .catch(() => fail('gpt2: Fine-tune on a new text did not start from GPT-2 with both validation losses'));
  await page.evaluate(() => window.webgrad.pause());
  if (!(await page.isVisible('#lora-before'))) await fail('gpt2: no sample from before the fine-tuning');
  await page.screenshot({ path: `${out}/gpt2.png`, fullPage: true });
}
