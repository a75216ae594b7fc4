// End-to-end test of the playground: for each task, train in headless Chromium (WebGPU on
// SwiftShader) until the validation loss falls below its first value, check that the views
// drew, upload a broken checkpoint and see the error sentence, and save a screenshot.
// Usage: node playground.mjs URL OUTPUT_DIR

import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';

const [url, out] = process.argv.slice(2);
mkdirSync(out, { recursive: true });
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
const problems = [];
page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));

const state = () => page.evaluate(() => window.webgrad.state());
const fail = async (why) => {
  await page.screenshot({ path: `${out}/failure.png` });
  console.error(`FAIL: ${why}\nstate: ${JSON.stringify(await state().catch(() => null))}`);
  await browser.close();
  process.exit(1);
};
// A canvas drew if its pixels are not all the same.
const drew = (id) => page.evaluate((id) => {
  const c = document.getElementById(id);
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  for (let i = 4; i < d.length; i += 4) {
    if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) return true;
  }
  return false;
}, id);

// The page runs under its Content-Security-Policy (tools/csp.py): a violation is an error.
await page.addInitScript(() => document.addEventListener('securitypolicyviolation',
  (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`)));
const started = Date.now();
await page.goto(url);
if (!(await page.evaluate(() => !!document.querySelector('meta[http-equiv="Content-Security-Policy"]')))) {
  await fail('the page has no Content-Security-Policy');
}
await page.waitForFunction(() => window.webgrad && window.webgrad.state().val_loss != null, null, { timeout: 120000 })
  .catch(() => fail('the page never evaluated its first model'));
console.log(`first evaluation visible after ${((Date.now() - started) / 1000).toFixed(1)} s: ${JSON.stringify(await state())}`);

const tasks = [
  { task: 'spiral', canvases: ['boundary', 'loss-chart'], timeout: 120 },
  { task: 'digits', canvases: ['digit-grid', 'confusion', 'loss-chart', 'acc-chart'], timeout: 300 },
  { task: 'text', canvases: ['loss-chart'], timeout: 300 },
];
for (const { task, canvases, timeout } of tasks) {
  const t0 = Date.now();
  await page.evaluate((t) => window.webgrad.setTask(t), task);
  await page.waitForFunction((t) => { const s = window.webgrad.state(); return s.task === t && s.step === 0 && s.val_loss != null; }, task, { timeout: 120000 })
    .catch(() => fail(`${task}: no first evaluation`));
  const first = (await state()).val_loss;
  if (task === 'text') {
    // The size is on auto: Reset timed the presets. SwiftShader is far below the visible pace.
    const note = (await state()).note || '';
    if (!note.startsWith('Sized to this GPU: tiny')) await fail(`text: no sizing sentence for tiny, got "${note}"`);
    if (await page.inputValue('#gpt-size') !== 'tiny') await fail('text: the size control does not show the size chosen');
    console.log(`text: ${note}`);
  }
  await page.evaluate(() => window.webgrad.train());
  await page.waitForFunction((first) => { const s = window.webgrad.state(); return s.step > 0 && s.val_loss < first; }, first, { timeout: timeout * 1000, polling: 250 })
    .catch(() => fail(`${task}: the validation loss did not fall below its first value ${first}`));
  const s = await state();
  console.log(`${task}: validation loss ${first.toFixed(3)} -> ${s.val_loss.toFixed(3)} at step ${s.step} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  await page.evaluate(() => window.webgrad.pause());
  for (const id of canvases) {
    if (!(await drew(id))) await fail(`${task}: the canvas ${id} is blank`);
  }
  if (task === 'text') {
    await page.click('#sample');
    await page.waitForFunction(() => document.getElementById('sample-out').textContent.length > 40, null, { timeout: 120000 })
      .catch(() => fail('text: no sample appeared'));
  }
  await page.setInputFiles('#load', { name: 'broken.safetensors', mimeType: 'application/octet-stream', buffer: Buffer.from('this is not a checkpoint') });
  await page.waitForFunction(() => { const e = document.getElementById('error'); return !e.hidden && e.textContent.includes('cannot be loaded'); }, null, { timeout: 30000 })
    .catch(() => fail(`${task}: no error sentence for a broken checkpoint`));
  await page.screenshot({ path: `${out}/${task}.png` });
}
// A run pauses at its step count and says so, with its best validation loss.
await page.evaluate(() => window.webgrad.setTask('spiral'));
await page.waitForFunction(() => { const s = window.webgrad.state(); return s.task === 'spiral' && s.step === 0 && s.val_loss != null; }, null, { timeout: 120000 })
  .catch(() => fail('spiral: no first evaluation after switching back'));
await page.evaluate(() => window.webgrad.train());
await page.waitForFunction(() => { const s = window.webgrad.state(); return !s.running && s.note && s.note.startsWith('Done'); }, null, { timeout: 180000, polling: 250 })
  .catch(() => fail('spiral: the run did not stop at its step count with a sentence'));
const done = await state();
if (done.step !== 1500) await fail(`spiral: stopped at step ${done.step}, not its 1500`);
if (!(await page.isVisible('#note'))) await fail('spiral: the done sentence is not shown');
console.log(`spiral done: ${done.note}`);
await page.screenshot({ path: `${out}/done.png` });

// Narrow screens get one column.
await page.setViewportSize({ width: 420, height: 900 });
await page.screenshot({ path: `${out}/narrow.png` });

// Bench mode: the same lines as `webgrad bench`, from this browser's adapter.
await page.setViewportSize({ width: 1280, height: 800 });
await page.goto(`${url}?bench=1&only=mlp_mnist_b128`);
await page.waitForFunction(() => window.webgrad && window.webgrad.bench().done, null, { timeout: 300000, polling: 500 })
  .catch(() => fail('bench: the benchmark did not finish'));
const bench = await page.evaluate(() => window.webgrad.bench());
if (bench.error) await fail(`bench: ${bench.error}`);
const row = bench.lines.find((l) => l.startsWith('mlp_mnist_b128 '));
if (!row) await fail(`bench: no mlp_mnist_b128 line in ${JSON.stringify(bench.lines)}`);
const figures = JSON.parse(row.slice(row.indexOf('{')));
if (!(figures.ms > 0 && figures.samples_per_s > 0 && figures.params === 669706)) await fail(`bench: odd figures ${row}`);
if (figures.buffers_created_per_step !== 0 || figures.submits_per_step !== 1) await fail(`bench: a step should create no buffer and submit once: ${row}`);
if (!(await page.textContent('#bench-lines')).includes('mlp_mnist_b128')) await fail('bench: the line is not shown in the page');
console.log(`bench in this browser: ${bench.lines.join(' | ')}`);
await page.screenshot({ path: `${out}/bench.png` });
if (problems.length) await fail(problems.join('\n'));
console.log(`e2e passed; screenshots in ${out}`);
await browser.close();
