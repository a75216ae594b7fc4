// What a newcomer meets in the first seconds, checked in headless Chromium at 1280 × 800: each
// task's data, model and output on the first screen with few words; a run paced to be watched
// (and "max" much faster); Space, immediate changes and edits that survive task switches;
// text that follows training; a loaded checkpoint named, and one of another task taken as it
// is; a page that holds still (layout shift over 10 s of training on each task, canvas text of
// 11 px at least).
// Usage: node first_screen.mjs URL OUTPUT_DIR

import { open, firstEvaluation } from './lib.mjs';

const [url, out] = process.argv.slice(2);
const t = await open(out);
const { page, state, fail } = t;

// Records the smallest font size drawn on any canvas, in CSS pixels (the page's canvases map
// one CSS pixel to devicePixelRatio backing pixels; at 1 the two are the same).
await page.addInitScript(() => {
  const font = Object.getOwnPropertyDescriptor(CanvasRenderingContext2D.prototype, 'font');
  window.smallestFont = { px: Infinity, canvas: null };
  Object.defineProperty(CanvasRenderingContext2D.prototype, 'font', {
    set(v) {
      const m = /([\d.]+)px/.exec(v);
      const px = m ? parseFloat(m[1]) / devicePixelRatio : Infinity;
      if (px < window.smallestFont.px) window.smallestFont = { px, canvas: this.canvas.id, font: v };
      font.set.call(this, v);
    },
    get() { return font.get.call(this); },
  });
});

await page.goto(url);
await firstEvaluation(t);

// The parts of each task that must be on the first screen: data, model, output.
const FIRST_SCREEN = {
  spiral: ['data-plot', 'network', 'boundary'],
  digits: ['pad', 'digit-grid', 'filters', 'feature-maps', 'pad-probs', 'confusion'],
  text: ['user-text', 'attention', 'sample-out'],
};

// Words of prose (sentences and captions, not the names of controls, buttons or figures)
// visible in the first viewport.
const proseWords = () => page.evaluate(() => {
  const notProse = 'button, select, option, label, legend, summary, textarea, canvas, h1, h2, #stats, .chip, #model-summary';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const words = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(notProse) || !n.textContent.trim()) continue;
    // (A closed "?" keeps its text laid out but not shown.)
    if (!el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    const seen = Array.from(range.getClientRects()).some((r) => r.width > 0 && r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth);
    if (seen) words.push(...n.textContent.trim().split(/\s+/));
  }
  return words;
});

// Layout shifts from now on (those right after a click or a key are the user's, and not
// counted, as the standard has it); `stillFor` fails when they add up to 0.02 or more.
const watchShifts = () => page.evaluate(() => {
  window.shift = 0;
  window.shifted = [];
  window.shiftFrom = performance.now();
  const name = (n) => n && (n.id ? `#${n.id}` : `${n.nodeName}.${n.className || ''}`);
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.hadRecentInput) continue;
      window.shift += e.value;
      window.shifted.push(...(e.sources || []).map((s) => `${name(s.node)} in ${name(s.node?.parentElement)}`));
    }
  }).observe({ type: 'layout-shift' });
});
const stillFor = async (task) => {
  const { shift, seconds, shifted } = await page.evaluate(() => ({ shift: window.shift, seconds: (performance.now() - window.shiftFrom) / 1000, shifted: window.shifted.join(', ') }));
  console.log(`${task}: layout shift ${shift.toFixed(4)} over ${seconds.toFixed(0)} s of training`);
  if (!(seconds >= 10)) await fail(`${task}: layout shift watched for ${seconds} s only`);
  if (!(shift < 0.02)) await fail(`${task}: the page shifted by ${shift} while training: ${shifted}`);
  await page.screenshot({ path: `${out}/trained-${task}.png` });
};
const pixels = (id) => page.evaluate((id) => document.getElementById(id).toDataURL(), id);
const until = (f, arg, ms, why) => page.waitForFunction(f, arg, { timeout: ms, polling: 100 }).catch(() => fail(why));
const fresh = (task) => until((task) => { const s = window.webgrad.state(); return s.task === task && s.step === 0 && s.val_loss != null; }, task, 120000, `${task}: no first evaluation`);

// 1. One screen per task, few words.
for (const task of Object.keys(FIRST_SCREEN)) {
  await page.evaluate((task) => window.webgrad.setTask(task), task);
  await fresh(task);
  await page.waitForTimeout(500);
  for (const id of FIRST_SCREEN[task]) {
    const box = await page.locator(`#${id}`).boundingBox();
    if (!box || box.x < 0 || box.y < 0 || box.x + box.width > 1280 || box.y + box.height > 800) {
      await fail(`${task}: #${id} is not wholly on the first screen: ${JSON.stringify(box)}`);
    }
  }
  const words = await proseWords();
  console.log(`${task}: ${words.length} words of prose on the first screen`);
  if (words.length > 60) await fail(`${task}: ${words.length} words on the first screen: ${words.join(' ')}`);
  await page.screenshot({ path: `${out}/first-screen-${task}.png` });
}

// 2. A run to watch: at the default speed the spiral still trains after 5 s and its boundary
// changes every second; at max it takes at least ten times as many steps.
await page.evaluate(() => window.webgrad.setTask('spiral'));
await fresh('spiral');
const speed = await page.inputValue('#speed');
await watchShifts();
await page.click('#train');
let last = await pixels('boundary');
const stepsAt = [(await state()).step];
for (let s = 1; s <= 5; s++) {
  await page.waitForTimeout(1000);
  const now = await pixels('boundary');
  stepsAt.push((await state()).step);
  if (s >= 3 && now === last) await fail(`pace: the boundary did not change in second ${s} at speed ${speed}`);
  last = now;
}
if (!(await state()).running) await fail('pace: the spiral stopped within 5 s at the default speed');
const watched = stepsAt[5] - stepsAt[0];
await page.selectOption('#speed', 'max');
const fromMax = (await state()).step;
await page.waitForTimeout(5000);
const flat = (await state()).step - fromMax;
console.log(`pace: ${watched} steps in 5 s at ${speed}/s, ${flat} at max`);
if (!(watched > 0 && flat >= 10 * watched)) await fail(`pace: max took ${flat} steps in 5 s against ${watched} at ${speed}/s`);
await page.click('#train');
await stillFor('spiral');

// 3. Space after a click on Reset trains (it does not press Reset again); a change of width
// rebuilds the network at once; a typed edit survives a task switch and back.
await page.click('#reset');
await fresh('spiral');
await page.keyboard.press(' ');
await until(() => window.webgrad.state().running && window.webgrad.state().step > 0, null, 10000, 'space after Reset did not start training');
await page.keyboard.press(' ');
await until(() => !window.webgrad.state().running, null, 10000, 'space did not pause');
const network = await pixels('network');
await page.fill('#width', '5');
await page.dispatchEvent('#width', 'change');
await until((before) => document.getElementById('network').toDataURL() !== before && window.webgrad.state().step === 0, network, 10000, 'a new width did not rebuild the network view at once');
const summary = (await page.textContent('#model-summary')).replace(/\s+/g, ' ');
if (!summary.includes('weight 5 × 2')) await fail(`width: the summary does not show a first layer 5 wide: ${summary}`);
// Edits stay with their task, switched as a person does: the task list and a data set button.
await page.fill('#width', '12');
await page.dispatchEvent('#width', 'change');
await page.selectOption('#task', 'digits');
await fresh('digits');
if (await page.inputValue('#lr') !== '0.002') await fail(`edits: the digits task took the spiral's learning rate (${await page.inputValue('#lr')})`);
await page.fill('#hidden', '48');
await page.dispatchEvent('#hidden', 'change');
await page.selectOption('#task', 'spiral');
await fresh('spiral');
if (await page.inputValue('#width') !== '12') await fail(`edits: the width typed on the spiral came back as ${await page.inputValue('#width')}`);
// The data set buttons switch too, each set with its own settings.
await page.click('#datasets button[data-task=moons]');
await fresh('moons');
if (await page.inputValue('#width') !== '32') await fail(`edits: the moons took the spiral's width (${await page.inputValue('#width')})`);
await page.click('#datasets button[data-task=spiral]');
await fresh('spiral');
if (await page.inputValue('#width') !== '12') await fail(`edits: the width typed on the spiral came back as ${await page.inputValue('#width')} after the moons`);
await page.selectOption('#task', 'digits');
await fresh('digits');
if (await page.inputValue('#hidden') !== '48') await fail(`edits: the hidden width typed on the digits came back as ${await page.inputValue('#hidden')}`);
await page.selectOption('#task', 'spiral');
await fresh('spiral');
// A change that is not cheap waits for Apply, and the Reset button says so.
await page.evaluate(() => window.webgrad.setTask('digits'));
await fresh('digits');
await page.fill('#hidden', '32');
await page.dispatchEvent('#hidden', 'change');
if (await page.textContent('#reset') !== 'Apply') await fail('a changed CNN setting does not show Apply');
await page.click('#reset');
await until(() => document.getElementById('reset').textContent === 'Reset', null, 60000, 'Apply stayed after the new model');
await fresh('digits');
await watchShifts();
await page.evaluate(() => window.webgrad.train());
await page.waitForTimeout(10000);
await page.evaluate(() => window.webgrad.pause());
await stillFor('digits');

// 4. Text that follows training: samples come without pressing Sample, headed by their step.
await page.evaluate(() => window.webgrad.setTask('text'));
await fresh('text');
await watchShifts();
const textFrom = Date.now();
await page.click('#train');
await until(() => document.querySelectorAll('#sample-out .sample').length >= 2, null, 90000, 'text: no samples written while training');
const heads = await page.$$eval('#sample-out .sample .at', (a) => a.map((e) => e.textContent));
if (!heads.every((h) => /^step \d+$/.test(h))) await fail(`text: samples not headed by their step: ${heads}`);
// Sample, while training: its progress shows, and its 300 characters come within a minute
// even on a software GPU (they go before the steps).
const sampledFrom = Date.now();
// Progress may come and go faster than a poll on a fast GPU: every text it showed is kept.
await page.evaluate(() => {
  window.progressShown = [];
  const el = document.getElementById('sample-progress');
  new MutationObserver(() => window.progressShown.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
});
await page.click('#sample');
await until(() => Array.from(document.querySelectorAll('#sample-out .sample'))
  .some((b) => b.querySelector('.at').textContent.endsWith('(Sample)') && b.querySelectorAll('span.c').length >= 300), null, 60000, 'text: Sample crawled: no 300 characters within a minute');
console.log(`text: Sample wrote 300 characters in ${((Date.now() - sampledFrom) / 1000).toFixed(1)} s while training`);
if (!(await page.evaluate(() => window.progressShown.some((t) => /^\d+ \/ 300$/.test(t))))) await fail('text: Sample showed no progress');
await page.waitForTimeout(Math.max(0, 10500 - (Date.now() - textFrom)));
await page.click('#train');
await stillFor('text');
console.log(`text: samples written on their own at ${heads.join(', ')}`);

// Loading a checkpoint says which and at what step.
const [saved] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), page.click('#save')]);
const bytes = await (await import('node:fs/promises')).readFile(await saved.path());
const at = (await state()).step;
await page.click('#reset');
await fresh('text');
await page.setInputFiles('#load', { name: 'my-run.safetensors', mimeType: 'application/octet-stream', buffer: bytes });
await until((at) => (window.webgrad.state().note || '').includes(`Loaded my-run.safetensors: the model at step ${at}`), at, 60000, 'load: no sentence naming the file and its step');
// A checkpoint of another task takes its task, settings and vocabulary with it.
await page.evaluate(() => window.webgrad.setTask('digits'));
await fresh('digits');
await page.setInputFiles('#load', { name: 'shakespeare-run.safetensors', mimeType: 'application/octet-stream', buffer: bytes });
await until((at) => { const s = window.webgrad.state(); return s.task === 'text' && !s.error && (s.note || '').includes(`Loaded shakespeare-run.safetensors: the model at step ${at}`); }, at, 120000, 'load: a text checkpoint loaded on the digits task did not become a text run');
if (await page.inputValue('#task') !== 'text') await fail('load: the task control does not show the loaded model\'s task');
if (new URL(page.url()).searchParams.get('task') !== 'text') await fail('load: the link does not name the loaded model\'s task');

// (Fine-tune starting training at once, and the base text staying the base, are checked in
// lora.mjs.)

// The smallest canvas text drawn over all of the above.
const smallest = await page.evaluate(() => window.smallestFont);
console.log(`smallest canvas text: ${smallest.px} px (${smallest.canvas}, "${smallest.font}")`);
if (!(smallest.px >= 11)) await fail(`canvas text of ${smallest.px} px on #${smallest.canvas}`);
await t.done();
console.log('first screen passed');
