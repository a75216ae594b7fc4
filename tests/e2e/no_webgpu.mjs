// End-to-end test of the page in a browser without WebGPU: navigator.gpu is removed before the
// page loads, so every task trains on the CPU backend, and the page says so.
// Usage: node no_webgpu.mjs URL OUTPUT_DIR

import { open, firstEvaluation, trainTask, drew } from './lib.mjs';

const [url, out] = process.argv.slice(2);
const t = await open(out, { noWebGpu: true });
await t.page.goto(url);
await firstEvaluation(t);
const adapter = (await t.state()).adapter;
if (!adapter.includes('no WebGPU adapter') || !(await t.page.textContent('#adapter')).includes('on the CPU')) {
  await t.fail(`the page does not say it trains on the CPU: "${adapter}"`);
}
for (const [task, canvas, timeout] of [['spiral', 'boundary', 120], ['digits', 'confusion', 300], ['text', 'loss-chart', 300]]) {
  await trainTask(t, task, timeout);
  const note = (await t.state()).note || '';
  if (task === 'text' && !note.startsWith('Sized to the CPU backend')) await t.fail(`text: the sizing does not name the CPU backend: "${note}"`);
  if (!(await drew(t.page, canvas))) await t.fail(`${task}: the canvas ${canvas} is blank`);
}
await t.page.screenshot({ path: `${out}/no-webgpu.png` });
await t.done();
console.log('no-WebGPU e2e passed');
