// End-to-end test of the page in a browser without WebGPU: navigator.gpu is removed before the
// page loads, so every task trains on the CPU backend, and the page says so.
// Usage: node no_webgpu.mjs URL OUTPUT_DIR

import { open, firstEvaluation, trainTask, drew, frameGaps, trainsWithoutFrames } from './lib.mjs';

// The longest the page may go without drawing a frame while training (a 60 Hz frame is 17 ms;
// headless Chromium on 2 shared cores misses some).
const MOST_FRAME_GAP_MS = 250;

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
// The CPU backend computes in the training worker: a text step takes far longer than a frame,
// and the page must keep drawing frames meanwhile.
await t.page.evaluate(() => window.webgrad.train());
const { longest, steps } = await frameGaps(t, 3000);
await t.page.evaluate(() => window.webgrad.pause());
if (steps <= 0) await t.fail(`text: no step was trained while the frames were timed`);
if (longest > MOST_FRAME_GAP_MS) await t.fail(`text on the CPU: the page froze for ${longest.toFixed(0)} ms while training`);
console.log(`text on the CPU: ${steps} steps in 3 s, the longest wait between frames ${longest.toFixed(0)} ms`);
await trainsWithoutFrames(t, 'text on the CPU');
await t.page.screenshot({ path: `${out}/no-webgpu.png` });
await t.done();
console.log('no-WebGPU e2e passed');
