// The views of the model's insides, checked in the page: each drew (not blank) and changed
// after training; clicks in the digit views choose what the others show; the pad prepares a
// drawing as MNIST's digits were prepared; sampling runs beside training; and every task on a
// phone-sized, high-DPI screen shows its views first. Used by playground.mjs.

import { drew } from './lib.mjs';

// The views of each task, beside the loss chart.
export const VIEWS = {
  spiral: ['network', 'boundary', 'flow-chart', 'weights'],
  digits: ['digit-grid', 'confusion', 'filters', 'feature-maps', 'flow-chart', 'weights'],
  text: ['attention', 'flow-chart', 'weights'],
};

// Each view's pixels, to compare before and after training.
export const snapshot = (page, task) => page.evaluate((ids) =>
  Object.fromEntries(ids.map((id) => [id, document.getElementById(id).toDataURL()])), VIEWS[task]);

// Each view of `task` drew, and differs from `before` (taken at the first evaluation).
export async function viewsChanged({ page, fail }, task, before) {
  const after = await snapshot(page, task);
  for (const id of VIEWS[task]) {
    if (!(await drew(page, id))) await fail(`${task}: the view ${id} is blank`);
    if (after[id] === before[id]) await fail(`${task}: the view ${id} did not change with training`);
  }
  const summary = await page.textContent('#model-summary');
  if (!/total[\d,]+/.test(summary.replace(/\s/g, ''))) await fail(`${task}: no model summary with a total: ${summary}`);
}

const pixels = (page, id) => page.evaluate((id) => {
  const c = document.getElementById(id);
  return { w: c.width, h: c.height, d: Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data) };
}, id);

// A ring drawn large in the pad's upper left comes to the model scaled to 20 of 28 pixels and
// centred, as MNIST's digits were.
export async function padPreparesDrawings({ page, fail }) {
  const box = await page.locator('#pad').boundingBox();
  const at = (a) => [box.x + box.width * (0.32 + 0.22 * Math.cos(a)), box.y + box.height * (0.32 + 0.22 * Math.sin(a))];
  await page.mouse.move(...at(0));
  await page.mouse.down();
  for (let i = 1; i <= 40; i++) await page.mouse.move(...at((i / 40) * 2 * Math.PI));
  await page.mouse.up();
  await page.waitForFunction(() => document.getElementById('pad-guess').textContent.startsWith('I think'), null, { timeout: 30000 })
    .catch(() => fail('pad: no guess for a drawing'));
  await page.waitForTimeout(300);
  const { w, h, d } = await pixels(page, 'pad-input');
  let [x0, y0, x1, y1, mass, mx, my] = [w, h, 0, 0, 0, 0, 0];
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const ink = 1 - d[(y * w + x) * 4] / 255;
      if (ink > 0.3) { x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x); y1 = Math.max(y1, y); }
      mass += ink; mx += ink * (x + 0.5); my += ink * (y + 0.5);
    }
  }
  const [side, cx, cy] = [Math.max(x1 - x0 + 1, y1 - y0 + 1) / w * 28, mx / mass / w * 28, my / mass / h * 28];
  console.log(`pad: the ring reaches the model ${side.toFixed(1)} pixels across, centred at ${cx.toFixed(1)}, ${cy.toFixed(1)} of 28`);
  if (!(side > 18 && side <= 21)) await fail(`pad: the drawing was not scaled to 20 pixels (${side})`);
  if (Math.abs(cx - 14) > 1 || Math.abs(cy - 14) > 1) await fail(`pad: the drawing was not centred (${cx}, ${cy})`);
  if (!(await drew(page, 'pad-probs'))) await fail('pad: no probability bars');
  if (!(await page.textContent('#maps-caption')).includes('your drawing')) await fail('pad: the feature maps do not show the drawing');
}

// A cell of the confusion matrix shows its digits; a click on a digit shows its feature maps.
export async function digitClicks({ page, fail }) {
  // Paused, the matrix's accuracy says which model it is of: the one paused, which can be
  // newer than the last evaluation the stats line shows.
  const { step } = await page.evaluate(() => window.webgrad.state());
  await page.waitForFunction((step) => document.getElementById('digit-accuracy').textContent.includes(`at step ${step}:`), step, { timeout: 30000 })
    .catch(async () => fail(`digits: the matrix's caption does not name the paused step ${step}: "${await page.textContent('#digit-accuracy')}"`));
  const box = await page.locator('#confusion').boundingBox();
  const scale = box.width / 300;
  // Cells on the diagonal (true d, guessed d) until one holds digits: the matrix starts 34 px
  // in, cells are 22 px.
  let caption = '';
  for (let d = 0; d < 10 && !caption.startsWith('Test digits'); d++) {
    await page.mouse.click(box.x + (34 + (d + 0.5) * 22) * scale, box.y + (34 + (d + 0.5) * 22) * scale);
    await page.waitForFunction((d) => { const c = document.getElementById('mistakes-caption').textContent; return !document.getElementById('mistakes').hidden && c.includes(` ${d} `); }, d, { timeout: 30000 })
      .catch(() => fail(`digits: a click on the cell (${d}, ${d}) showed nothing`));
    caption = await page.textContent('#mistakes-caption');
    if (!/^(Test digits \d the model read right: \d+ of \d+ shown|No test digit \d was read as \d\.)/.test(caption)) await fail(`digits: the cell's caption reads "${caption}"`);
  }
  if (!caption.startsWith('Test digits')) await fail('digits: no digit on the diagonal was read right');
  if (!(await drew(page, 'mistake-grid'))) await fail('digits: the chosen cell\'s digits are blank');
  // The grid's canvas is drawn at 336 CSS px and may be shown narrower: click where the sixth
  // digit is shown.
  const grid = await page.locator('#digit-grid').boundingBox();
  const shown = grid.width / 336;
  await page.mouse.click(grid.x + (5 * 28 + 14) * shown, grid.y + 14 * shown);
  await page.waitForFunction(() => document.getElementById('maps-caption').textContent.includes('test digit 6'), null, { timeout: 30000 })
    .catch(() => fail('digits: a click on the sixth digit did not show its feature maps'));
}

// Sample while training: characters come, shaded by probability, and the steps go on.
export async function sampleBesideTraining({ page, state, fail }) {
  await page.evaluate(() => window.webgrad.train());
  const from = (await state()).step;
  await page.click('#sample');
  // The sample Sample asked for is headed so (training writes its own every few seconds).
  // (Functions, not strings: the page's Content-Security-Policy forbids eval.)
  await page.waitForFunction(() => Array.from(document.querySelectorAll('#sample-out .sample'))
    .find((b) => b.querySelector('.at').textContent.endsWith('(Sample)'))?.querySelectorAll('span.c').length >= 20, null, { timeout: 120000 })
    .catch(() => fail('text: no sample appeared while training'));
  await page.waitForFunction((from) => window.webgrad.state().running && window.webgrad.state().step > from, from, { timeout: 120000 })
    .catch(async () => fail(`text: training stalled while sampling (step ${from} -> ${(await state()).step})`));
  const s = await state();
  const shaded = await page.evaluate(() => new Set(Array.from(Array.from(document.querySelectorAll('#sample-out .sample'))
    .find((b) => b.querySelector('.at').textContent.endsWith('(Sample)')).querySelectorAll('span.c')).map((e) => e.style.background)).size);
  if (shaded < 3) await fail('text: the sampled characters are not shaded by their probability');
  console.log(`text: 20 characters sampled while training went from step ${from} to ${s.step}`);
  await page.evaluate(() => window.webgrad.pause());
}

// Every task on a phone (390 × 844, three device pixels per CSS pixel): the views come before
// the charts, the settings are folded, the canvases are drawn at the screen's resolution.
export async function phone(browser, url, out, fail) {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 3 });
  await page.goto(url);
  await page.waitForFunction(() => window.webgrad && window.webgrad.state().val_loss != null, null, { timeout: 120000 })
    .catch(() => fail('phone: the page never evaluated its first model'));
  for (const task of Object.keys(VIEWS)) {
    await page.evaluate((t) => window.webgrad.setTask(t), task);
    await page.waitForFunction((t) => { const s = window.webgrad.state(); return s.task === t && s.val_loss != null; }, task, { timeout: 120000 })
      .catch(() => fail(`phone: ${task} never evaluated`));
    await page.waitForFunction(async (id) => { const c = document.getElementById(id); return c.width > 0; }, VIEWS[task][0]);
    for (let i = 0; i < 60 && !(await drew(page, VIEWS[task][0])); i++) await page.waitForTimeout(500);
    if (!(await drew(page, VIEWS[task][0]))) await fail(`phone: ${task}'s first view is blank`);
    const [view, charts] = await Promise.all(['.view', '.charts'].map((s) => page.locator(s).boundingBox()));
    if (!(view.y < charts.y)) await fail(`phone: ${task}'s views come after the charts`);
    if (await page.evaluate(() => document.getElementById('settings').open)) await fail('phone: the settings are not folded');
    const [css, backing] = await page.evaluate(() => { const c = document.getElementById('loss-chart'); return [c.getBoundingClientRect().width, c.width]; });
    if (!(backing >= 2.5 * css)) await fail(`phone: the loss chart is not drawn at the screen's resolution (${backing} for ${css} CSS px)`);
    await page.screenshot({ path: `${out}/phone-${task}.png`, fullPage: true });
  }
  await page.close();
}

// Your own points: a bad CSV file gets its sentence and changes nothing; a good one (two blobs
// far from the plane's scale, fewer training points than the batch) is trained on until the
// model separates them.
export async function ownPoints({ page, state, fail }, out) {
  const file = (name, text) => ({ name, mimeType: 'text/csv', buffer: Buffer.from(text) });
  const before = await state();
  await page.setInputFiles('#points-file', file('bad.csv', 'x,y,label\n0.1,0.2,0\n0.3,0.4,7\n'));
  await page.waitForFunction(() => (window.webgrad.state().error || '').includes('line 3: the label "7" is not 0 or 1'), null, { timeout: 30000 })
    .catch(() => fail('points: no sentence for a bad CSV file'));
  if ((await state()).step !== before.step) await fail('points: a bad file changed the run');
  let rows = 'x,y,label\n';
  for (let i = 0; i < 50; i++) {
    const [l, a] = [i % 2, i * 2.399];
    rows += `${(l ? 30 : -30) + 12 * Math.cos(a)},${(l ? 20 : -20) + 12 * Math.sin(a)},${l}\n`;
  }
  await page.setInputFiles('#points-file', file('blobs.csv', rows));
  await page.waitForFunction(() => { const s = window.webgrad.state(); return (s.note || '').startsWith('Training on your 50 points') && s.step === 0 && s.val_loss != null && !s.error; }, null, { timeout: 60000 })
    .catch(() => fail('points: a good CSV file did not start a run on its points'));
  await page.evaluate(() => window.webgrad.train());
  await page.waitForFunction(() => window.webgrad.state().val_acc >= 0.95, null, { timeout: 120000, polling: 250 })
    .catch(() => fail('points: the model did not learn the file\'s two blobs'));
  await page.evaluate(() => window.webgrad.pause());
  if (await page.inputValue('#batch') !== '40') await fail('points: the batch was not lowered to the file\'s 40 training points');
  console.log(`points: your 50 points (batch lowered to 40) learned to ${(100 * (await state()).val_acc).toFixed(0)}% at step ${(await state()).step}`);
  await page.screenshot({ path: `${out}/own-points.png` });
  await page.click('#points-builtin');
  await page.waitForFunction(() => { const s = window.webgrad.state(); return !(s.note || '').startsWith('Training on your') && s.step === 0 && s.val_loss != null; }, null, { timeout: 60000 })
    .catch(() => fail('points: "Back to the built-in points" did not start a run on them'));
}
