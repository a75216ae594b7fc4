// `?limits=webgpu`: the training worker opens its device with only the limits WebGPU
// guarantees (16 KiB of workgroup memory, 128 MiB bindings, …), as on the least capable device
// the standard allows; the page says so in its adapter line, keeps the parameter in its link
// (it is no unknown setting) and trains. Usage: node limits.mjs URL OUTPUT_DIR

import { open, firstEvaluation } from './lib.mjs';

const [url, out] = process.argv.slice(2);
const t = await open(out);
const { page, state, fail } = t;
await page.goto(`${url}?limits=webgpu&task=digits`);
await firstEvaluation(t);
const adapter = (await state()).adapter;
if (!adapter.includes('only the limits WebGPU guarantees')) await fail(`the adapter line does not name the limits: "${adapter}"`);
await page.evaluate(() => window.webgrad.train());
await page.waitForFunction(() => { const s = window.webgrad.state(); return s.step >= 40 && s.val_loss != null; }, null, { timeout: 120000, polling: 250 })
  .catch(() => fail('the digits did not train under the guaranteed limits'));
await page.evaluate(() => window.webgrad.pause());
const s = await state();
if (s.error) await fail(`an error is shown: ${s.error}`);
const link = new URL(page.url()).searchParams.get('limits');
if (link !== 'webgpu') await fail(`the link lost its limits: ${page.url()}`);
const beside = await page.evaluate(() => document.getElementById('task-link-hint')?.textContent ?? '');
if (beside.includes('does not have')) await fail(`limits is taken for an unknown setting: "${beside}"`);
console.log(`limits: the digits trained to step ${s.step} (val loss ${s.val_loss.toFixed(3)}) on "${adapter}"`);
await t.done();
