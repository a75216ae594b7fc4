// LoRA fine-tuning in the page: the text model as trained becomes the frozen base of a run that
// trains only adapters on the user's text. A character the model lacks is refused beside the
// text box; a good text starts the run with a sample of the base kept to compare, two
// validation curves (the new text's and the base's), and the adapters and the merged model as
// downloads in the formats the CLI writes.

import { readFileSync } from 'node:fs';

// The JSON header of a safetensors file.
const header = (path) => {
  const bytes = readFileSync(path);
  const length = Number(bytes.readBigUInt64LE(0));
  return JSON.parse(bytes.subarray(8, 8 + length).toString('utf8'));
};

async function download(page, id) {
  const [file] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.click(`#${id}`)]);
  return { name: file.suggestedFilename(), header: header(await file.path()) };
}

export async function loraFineTune({ page, state, fail }, out) {
  const line = 'the quick brown fox jumps over the lazy dog. ';
  await page.fill('#user-text', `${line.repeat(20)}€`);
  await page.click('#lora-start');
  await page.waitForFunction(() => (window.webgrad.state().error || '').includes('is not one the model knows'), null, { timeout: 60000 })
    .catch(() => fail('lora: no sentence for a character the model lacks'));
  const beside = await page.textContent('#user-text-hint').catch(() => '');
  if (!beside.includes("'€'")) await fail(`lora: no sentence naming the character beside the text box: "${beside}"`);
  if ((await state()).lora_rank != null) await fail('lora: a refused text started a fine-tuning');
  if ((await state()).running) await fail('lora: a refused text started training');

  await page.fill('#user-text', line.repeat(40));
  await page.selectOption('#lora-rank', '4');
  await page.click('#lora-start');
  // Fine-tune starts training at once: its first evaluation is the first point of its chart.
  await page.waitForFunction(() => { const s = window.webgrad.state(); return s.lora_rank === 4 && s.val_loss != null && s.base_loss != null && !s.error; }, null, { timeout: 120000 })
    .catch(() => fail('lora: the fine-tuning did not start with both validation losses'));
  const first = await state();
  await page.waitForFunction(() => window.webgrad.state().running && window.webgrad.state().step > 0, null, { timeout: 60000 })
    .catch(() => fail('lora: Fine-tune did not start training'));
  const before = await page.textContent('#lora-before');
  if (!(before.length >= 20 && await page.isVisible('#lora-before'))) await fail(`lora: no sample from before the fine-tuning: "${before}"`);
  if (!(await page.textContent('#model-summary')).includes('lora_A')) await fail('lora: the summary does not list the adapters');

  const goal = 0.7 * first.val_loss;
  await page.waitForFunction((goal) => { const s = window.webgrad.state(); return s.val_loss < goal && s.base_loss != null; }, goal, { timeout: 300000, polling: 250 })
    .catch(() => fail(`lora: the loss on the new text did not fall from ${first.val_loss} below ${goal}`));
  await page.evaluate(() => window.webgrad.pause());
  const s = await state();
  console.log(`lora: rank 4 on a new text, validation ${first.val_loss.toFixed(3)} -> ${s.val_loss.toFixed(3)}, the base's text ${first.base_loss.toFixed(3)} -> ${s.base_loss.toFixed(3)} at step ${s.step}`);

  const adapters = await download(page, 'lora-adapters');
  const names = Object.keys(adapters.header).filter((n) => n !== '__metadata__');
  if (!(adapters.name.endsWith('-lora-adapters.safetensors') && names.length > 0 && names.every((n) => n.startsWith('base_model.model.') && /lora_[AB]\.weight$/.test(n)))) {
    await fail(`lora: the adapters file ${adapters.name} holds ${names.join(', ')}`);
  }
  if (JSON.parse(adapters.header.__metadata__.adapter_config).r !== 4) await fail('lora: the adapters file lacks PEFT\'s settings for rank 4');
  const merged = await download(page, 'lora-merged');
  const config = JSON.parse(merged.header.__metadata__.config);
  if (Object.keys(merged.header).some((n) => n.includes('lora_')) || config.model.Gpt.lora != null) {
    await fail(`lora: the merged model ${merged.name} still has adapters`);
  }
  // The sample from before begins with its prompt, as the model was given it.
  if (!before.startsWith(await page.inputValue('#prompt'))) await fail(`lora: the sample from before lacks its prompt: "${before.slice(0, 40)}"`);
  await page.screenshot({ path: `${out}/lora.png`, fullPage: true });
  // The fine-tuning text did not become the base's: a new model reads the base's characters.
  await page.click('#reset');
  await page.waitForFunction(() => { const s = window.webgrad.state(); return s.lora_rank == null && s.step === 0 && s.val_loss != null; }, null, { timeout: 120000 })
    .catch(() => fail('lora: Reset after fine-tuning built no model'));
  const vocab = Number(((await page.textContent('#model-summary')).replace(/\s+/g, ' ').match(/tok_emb\s*weight (\d+) ×/) || [])[1]);
  if (!(vocab > 40)) await fail(`lora: the model after fine-tuning has a vocabulary of ${vocab}: the fine-tuning text became the base text`);
}
