// Switching tasks and resetting in quick succession, as an impatient person or a script does:
// after each burst of calls, Train must train the task asked for last, with its own figures,
// control and link. Usage: node task_switching.mjs URL OUTPUT_DIR

import { open, firstEvaluation } from './lib.mjs';

const [url, out] = process.argv.slice(2);
const t = await open(out);
const { page, state, fail } = t;
await page.goto(url);
await firstEvaluation(t);

// Each burst runs in one go, with no wait between its calls.
const bursts = [
  ['xor', 'reset'], ['circles', 'moons'], ['digits', 'reset'], ['spiral', 'gauss', 'reset'],
  ['text', 'xor'], ['digits', 'spiral'], ['moons', 'reset', 'reset'], ['xor', 'digits', 'circles'],
  ['spiral', 'reset'], ['gauss', 'xor', 'reset', 'moons'],
];
for (const [i, burst] of bursts.entries()) {
  const task = burst.filter((c) => c !== 'reset').pop();
  await page.evaluate((burst) => {
    for (const call of burst) {
      if (call === 'reset') window.webgrad.reset(); else window.webgrad.setTask(call);
    }
    window.webgrad.train();
  }, burst);
  await page.waitForFunction((task) => { const s = window.webgrad.state(); return s.task === task && s.running && s.step >= 10 && s.val_loss != null; }, task, { timeout: 120000, polling: 100 })
    .catch(() => fail(`burst ${i} (${burst.join(', ')}): ${task} did not train`));
  await page.evaluate(() => window.webgrad.pause());
  const shown = await page.inputValue('#task');
  const link = new URL(page.url()).searchParams.get('task');
  if (shown !== task || link !== task) await fail(`burst ${i}: the control shows ${shown} and the link ${link}, not ${task}`);
  const s = await state();
  if (s.error) await fail(`burst ${i}: an error is shown: ${s.error}`);
}
console.log(`task switching: ${bursts.length} bursts, each trained the task asked for last`);

// Fifty task switches and Resets in one go, then Train: only the last is built (the worker drops
// the Resets a later one replaces), so training starts within 3 s of the last call.
const started = await page.evaluate(() => {
  const sets = ['xor', 'circles', 'moons', 'gauss', 'spiral'];
  for (let i = 0; i < 50; i++) {
    if (i % 2) window.webgrad.reset(); else window.webgrad.setTask(sets[(i / 2) % sets.length]);
  }
  window.webgrad.setTask('spiral');
  window.webgrad.train();
  return Date.now();
});
await page.waitForFunction(() => { const s = window.webgrad.state(); return s.task === 'spiral' && s.running && s.step > 0; }, null, { timeout: 60000, polling: 50 })
  .catch(() => fail('50 quick calls: the spiral did not train'));
const waited = Date.now() - started;
console.log(`task switching: 50 quick calls, then the first step ${waited} ms after the last`);
if (waited > 3000) await fail(`50 quick calls: the first step came ${waited} ms after the last call`);
await page.evaluate(() => window.webgrad.pause());

// Switching task while training keeps training, the first time and the second, a second
// apart or in one go: Train is not pressed again.
const trainsOn = (task, label) => page.waitForFunction((task) => { const s = window.webgrad.state(); return s.task === task && s.running && s.step >= 5 && s.val_loss != null; }, task, { timeout: 60000, polling: 100 })
  .catch(async () => fail(`${label}: ${task} did not go on training (${JSON.stringify(await state())})`));
await page.evaluate(() => window.webgrad.train());
for (const [label, calls] of [['first switch', ['xor']], ['second switch', ['moons']], ['two in one go', ['circles', 'gauss']]]) {
  await page.evaluate((calls) => { for (const task of calls) window.webgrad.setTask(task); }, calls);
  await trainsOn(calls[calls.length - 1], label);
}
console.log('task switching: three switches while training, each went on training');
await page.evaluate(() => window.webgrad.pause());
await t.done();
