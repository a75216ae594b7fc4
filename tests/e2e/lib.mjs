// Shared by the end-to-end tests: a headless Chromium page (WebGPU on SwiftShader, or none),
// the page's state, failing with a screenshot, and training a task until it learns.

import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';

const ARGS = ['--no-sandbox', '--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run',
  '--enable-precise-memory-info'];

// Opens a page in a new headless Chromium; with `noWebGpu`, neither the page nor its training
// worker sees navigator.gpu, as in a browser without WebGPU. Console errors, page errors and
// CSP violations are collected in `problems`: a run with any of them fails.
export async function open(out, { noWebGpu = false } = {}) {
  mkdirSync(out, { recursive: true });
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ARGS });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()}`); });
  // The training worker's own errors (a panic there stops its loop without a sound).
  page.on('worker', (w) => w.on('console', (m) => {
    if (m.type() === 'error') { problems.push(`worker console error: ${m.text()}`); console.error(`worker: ${m.text()}`); }
  }));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.addInitScript(() => document.addEventListener('securitypolicyviolation',
    (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`)));
  if (noWebGpu) {
    await page.addInitScript(() => { delete Navigator.prototype.gpu; });
    // The training worker has a navigator of its own: its start script loses the GPU too.
    await page.route('**/worker.js', async (route) => {
      const response = await route.fetch();
      const body = `delete WorkerNavigator.prototype.gpu;\n${await response.text()}`;
      await route.fulfill({ response, body });
    });
  }
  const state = () => page.evaluate(() => window.webgrad.state());
  const fail = async (why) => {
    await page.screenshot({ path: `${out}/failure.png` }).catch(() => {});
    console.error(`FAIL: ${why}\nstate: ${JSON.stringify(await state().catch(() => null))}`);
    if (problems.length) console.error(problems.join('\n'));
    await browser.close();
    process.exit(1);
  };
  const done = async () => {
    if (problems.length) await fail(problems.join('\n'));
    await browser.close();
  };
  return { browser, page, problems, state, fail, done };
}

// True if a canvas drew: its pixels are not all the same.
export const drew = (page, id) => page.evaluate((id) => {
  const c = document.getElementById(id);
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  for (let i = 4; i < d.length; i += 4) {
    if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) return true;
  }
  return false;
}, id);

// Waits for the page's first model to be evaluated.
export async function firstEvaluation({ page, fail }) {
  await page.waitForFunction(() => window.webgrad && window.webgrad.state().val_loss != null, null, { timeout: 120000 })
    .catch(() => fail('the page never evaluated its first model'));
}

// Switches to `task`, waits for its first evaluation, trains until the validation loss is
// below that first value, and pauses. Returns the first loss and the state reached.
// `atStart`, if given, runs at the first evaluation, before training.
export async function trainTask({ page, state, fail }, task, timeout, atStart = async () => {}) {
  const t0 = Date.now();
  await page.evaluate((t) => window.webgrad.setTask(t), task);
  await page.waitForFunction((t) => { const s = window.webgrad.state(); return s.task === t && s.step === 0 && s.val_loss != null; }, task, { timeout: 120000 })
    .catch(() => fail(`${task}: no first evaluation`));
  const first = (await state()).val_loss;
  await atStart();
  await page.evaluate(() => window.webgrad.train());
  await page.waitForFunction((first) => { const s = window.webgrad.state(); return s.step > 0 && s.val_loss < first; }, first, { timeout: timeout * 1000, polling: 250 })
    .catch(() => fail(`${task}: the validation loss did not fall below its first value ${first}`));
  await page.evaluate(() => window.webgrad.pause());
  const s = await state();
  console.log(`${task}: validation loss ${first.toFixed(3)} -> ${s.val_loss.toFixed(3)} at step ${s.step} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return { first, reached: s };
}

// The longest wait between two animation frames of the page over `ms` milliseconds, and the
// steps trained meanwhile.
export async function frameGaps({ page, state }, ms) {
  const before = (await state()).step;
  const longest = await page.evaluate((ms) => new Promise((done) => {
    let last = performance.now(); let longest = 0; const end = last + ms;
    const frame = (now) => {
      longest = Math.max(longest, now - last); last = now;
      if (now < end) requestAnimationFrame(frame); else done(longest);
    };
    requestAnimationFrame(frame);
  }), ms);
  return { longest, steps: (await state()).step - before };
}

// Training must not depend on the page's frames (a background tab gets none): with frames
// held back, the steps still go on. The frames held come afterwards, as when the tab is shown.
export async function trainsWithoutFrames({ page, state, fail }, label) {
  await page.evaluate(() => {
    window.realFrame = window.requestAnimationFrame;
    window.heldFrames = [];
    window.requestAnimationFrame = (f) => { window.heldFrames.push(f); return 0; };
    window.webgrad.train();
  });
  const before = (await state()).step;
  await page.waitForTimeout(3000);
  const after = (await state()).step;
  await page.evaluate(() => {
    window.requestAnimationFrame = window.realFrame;
    for (const f of window.heldFrames) window.realFrame(f);
    window.webgrad.pause();
  });
  if (after <= before) await fail(`${label}: no step was trained in 3 s without animation frames (step ${before} -> ${after})`);
  console.log(`${label}: ${after - before} steps in 3 s without animation frames`);
}
