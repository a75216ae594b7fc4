// Bad input through the page, case by case: values in the link that no control takes, number
// fields given what they cannot hold, and a file that is not text. Each case checks the
// sentence beside its cause and that nothing of the user's was lost.

import { firstEvaluation } from './lib.mjs';

// The sentence after a control: its own check ("-hint") or what the link asked ("-link-hint").
const hint = (page, id, kind = 'hint') => page.evaluate(([id, kind]) => {
  const h = document.getElementById(`${id}-${kind}`);
  return h && !h.hidden ? h.textContent : null;
}, [id, kind]);

export async function badInput(t, url, out) {
  const { page, fail } = t;
  let tested = 0;
  const expect = async (what, got, want) => {
    tested += 1;
    if (!got || !got.includes(want)) await fail(`bad input, ${what}: expected "${want}", got "${got}"`);
  };

  // The link: an unknown task, an option a select lacks, words in a number field, a name that
  // is no setting. The page keeps its defaults and says why beside each control.
  await page.goto(`${url}?task=nope&activation=swish&width=wide&lerning_rate=1`);
  await firstEvaluation(t);
  await expect('?task=nope', await hint(page, 'task', 'link-hint'), 'the task "nope", which does not exist');
  await expect('?lerning_rate', await hint(page, 'task', 'link-hint'), 'settings this page does not have (lerning_rate)');
  await expect('?activation=swish', await hint(page, 'activation', 'link-hint'), 'asks for "swish" here');
  await expect('?width=wide', await hint(page, 'width', 'link-hint'), 'asks for "wide" here');
  await expect('the activation control', await page.inputValue('#activation'), 'relu');
  await expect('the task control', await page.inputValue('#task'), 'spiral');
  await page.screenshot({ path: `${out}/bad-link.png` });
  await page.selectOption('#activation', 'tanh');
  if (await hint(page, 'activation', 'link-hint')) await fail('bad input: the link sentence stays after the user chose');

  // Number fields: each value's own sentence, not "not a number".
  const fields = [
    ['width', '-3', 'Must be at least 1.'],
    ['width', '2.5', 'must be a whole number'],
    ['width', '', 'needs a number'],
    ['depth', '-1', 'must not be negative'],
    ['batch', '0', 'Must be at least 1.'],
    ['lr', '-0.1', 'must be a positive number'],
    ['seed', '-7', 'must not be negative'],
    ['noise', '3', 'Between 0 and 1.'],
  ];
  for (const [id, value, want] of fields) {
    await page.fill(`#${id}`, value);
    await page.dispatchEvent(`#${id}`, 'change');
    await expect(`${id} = "${value}"`, await hint(page, id), want);
  }
  await page.screenshot({ path: `${out}/bad-fields.png` });
  // Reset with invalid fields says so; the sentence goes once they are fixed.
  await page.click('#reset');
  await page.waitForFunction(() => document.getElementById('error').textContent.includes('not valid'), null, { timeout: 30000 })
    .catch(() => fail('bad input: Reset with invalid fields gave no sentence'));
  for (const [id, value] of [['width', '32'], ['depth', '3'], ['batch', '64'], ['lr', '0.01'], ['seed', '0'], ['noise', '0.05']]) {
    await page.fill(`#${id}`, value);
    await page.dispatchEvent(`#${id}`, 'change');
  }
  tested += 1;
  if (await page.isVisible('#error')) await fail(`bad input: the error stays after the fields were fixed: ${await page.textContent('#error')}`);

  // A file that is not text leaves the user's own text in place, with a sentence.
  // (A fresh page: the fields above are left invalid.)
  await page.goto(`${url}?task=text`);
  await firstEvaluation(t);
  const own = 'My own words, typed by hand. '.repeat(20);
  await page.fill('#user-text', own);
  const files = [
    ['photo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0xff, 0xfe, 0x00]), 'not UTF-8 text'],
    ['data.bin', Buffer.from('text with a \u0000 inside'), 'is a NUL'],
    ['short.txt', Buffer.from('too short'), 'too few to train on'],
  ];
  for (const [name, buffer, want] of files) {
    await page.evaluate(() => { document.getElementById('error').hidden = true; });
    await page.setInputFiles('#text-file', { name, mimeType: 'text/plain', buffer });
    await page.waitForFunction((want) => { const e = document.getElementById('error'); return !e.hidden && e.textContent.includes(want); }, want, { timeout: 30000 })
      .catch(() => fail(`bad input, ${name}: no sentence with "${want}"`));
    await expect(name, await page.textContent('#error'), want);
    await expect(`${name} kept the user's text`, await page.inputValue('#user-text') === own ? 'kept' : 'replaced', 'kept');
  }
  await page.screenshot({ path: `${out}/bad-text-file.png` });
  // The sentence stays when the report of a Reset asked for just before arrives after it.
  await page.click('#reset');
  await page.setInputFiles('#text-file', { name: 'photo.png', mimeType: 'text/plain', buffer: files[0][1] });
  await page.waitForFunction(() => (window.webgrad.state().error || '').includes('not UTF-8 text'), null, { timeout: 30000 })
    .catch(() => fail('bad input: no sentence for a binary file picked during a Reset'));
  // The new run's figures start empty (its kept weights too) when its report arrives.
  await page.waitForFunction(() => window.webgrad.state().kept_step == null, null, { timeout: 120000 })
    .catch(() => fail('bad input: the Reset before the binary file built no run'));
  await page.waitForTimeout(1000);
  await expect('the file\'s sentence after the Reset\'s run was built', await page.textContent('#error'), 'not UTF-8 text');

  // Own text too short for a run: training from scratch on it says why beside the text box, not only at the top of
  // the page (on a phone the box is far below it); a text that can be used clears it.
  await page.fill('#user-text', 'too short');
  await page.click('#text-train');
  await page.waitForFunction(() => { const h = document.getElementById('user-text-hint'); return h && !h.hidden; }, null, { timeout: 30000 })
    .catch(() => fail('bad input: a text too short for a run gave no sentence beside the text box'));
  await expect('own text too short', await hint(page, 'user-text'), 'too few to train on');
  await page.fill('#user-text', own);
  await page.click('#text-train');
  await page.waitForFunction(() => !document.getElementById('user-text-hint'), null, { timeout: 60000 })
    .catch(() => fail('bad input: the sentence beside the text box stays once the text can be used'));
  tested += 1;

  // The GPT's fields are held to the bounds they show, and the sampling controls each say what
  // is wrong beside themselves, until they are fixed.
  for (const [id, value, want] of [['layers', '100', 'At most 12 layers.'], ['context', '99999', 'At most 512.']]) {
    await page.fill(`#${id}`, value);
    await page.dispatchEvent(`#${id}`, 'change');
    await expect(`${id} = "${value}"`, await hint(page, id), want);
  }
  for (const [id, value, want] of [['top-k', '-5', 'whole number from 0'], ['temperature', '0', 'from 0.05 to 3']]) {
    await page.fill(`#${id}`, value);
    await page.click('#sample');
    await expect(`${id} = "${value}"`, await hint(page, id, 'link-hint'), want);
  }
  await page.fill('#layers', '2');
  await page.fill('#context', '32');
  await page.fill('#top-k', '10');
  await page.fill('#temperature', '0.8');
  await page.click('#sample');
  tested += 1;
  if (await hint(page, 'top-k', 'link-hint') || await hint(page, 'temperature', 'link-hint')) {
    await fail('bad input: a sampling control keeps its sentence after it was fixed');
  }
  // A link giving the GPT's sizes without naming a size keeps them (not a size measured on
  // Reset, which would replace them without a word): invalid ones are said beside themselves.
  await page.goto(`${url}?task=text&heads=3&gpt-width=32&context=1`);
  await page.waitForFunction(() => document.getElementById('error').textContent.includes('not valid'), null, { timeout: 60000 })
    .catch(() => fail('bad input: a link with a GPT of heads 3, width 32, context 1 gave no sentence'));
  await expect('the link\'s size', await page.inputValue('#gpt-size'), 'custom');
  await expect('heads=3 with width 32', await hint(page, 'heads'), 'The heads must divide the width.');
  await expect('context=1', await hint(page, 'context'), 'At least 2.');
  // Those invalid GPT settings, hidden once the spiral is chosen, neither block it nor appear
  // in its banner.
  await page.evaluate(() => window.webgrad.setTask('spiral'));
  await firstEvaluation(t);
  await page.click('#train');
  await page.waitForFunction(() => window.webgrad.state().step > 0, null, { timeout: 60000 })
    .catch(() => fail('bad input: the spiral does not train after a text task with invalid hidden settings'));
  await page.click('#train');
  const banner = await page.textContent('#error');
  if (/Heads|Context|not valid/.test(banner)) await fail(`bad input: the spiral's banner names the text task's settings: "${banner}"`);
  // A link with settings no run can be built from: the sentence names them, and Train brings
  // the first into view instead of seeming to start (nothing would train). Fixed, they build
  // the run, which then trains.
  await page.goto(`${url}?task=digits&channels=8,x&lr=-1`);
  await page.waitForFunction(() => document.getElementById('error').textContent.includes('not valid'), null, { timeout: 60000 })
    .catch(() => fail('bad input: a link with invalid settings gave no sentence'));
  const invalid = await page.textContent('#error');
  await expect('an invalid link names the channels', invalid, 'Channels');
  await expect('an invalid link names the learning rate', invalid, 'Learning rate');
  await page.evaluate(() => { document.getElementById('settings').open = false; });
  await page.click('#train');
  await expect('Train with invalid settings', await page.textContent('#train'), 'Train');
  await expect('Train opens the settings', String(await page.evaluate(() => document.getElementById('settings').open)), 'true');
  await expect('Train focuses the first invalid control', await page.evaluate(() => document.activeElement.id), 'lr');
  await page.screenshot({ path: `${out}/bad-link-train.png` });
  for (const [id, value] of [['channels', '8,16'], ['lr', '0.01']]) {
    await page.fill(`#${id}`, value);
    await page.dispatchEvent(`#${id}`, 'change');
  }
  await firstEvaluation(t);
  await page.click('#train');
  await page.waitForFunction(() => window.webgrad.state().step > 0, null, { timeout: 60000 })
    .catch(() => fail('bad input: the run built once the settings were fixed does not train'));
  await page.click('#train');
  tested += 1;

  // A learning rate far too high: the loss runs away, finite (so the NaN guard lets it run),
  // and the page says so beside the learning rate. On the CPU backend, whose f64 keeps it
  // finite.
  await page.goto(`${url}?task=spiral&lr=1000000&backend=cpu`);
  await firstEvaluation(t);
  await page.click('#train');
  await page.waitForFunction(() => { const h = document.getElementById('lr-hint'); return h && !h.hidden && h.textContent.includes('ran away'); }, null, { timeout: 60000 })
    .catch(() => fail('bad input: a runaway loss gave no sentence beside the learning rate'));
  tested += 1;
  console.log(`bad input, runaway: ${await hint(page, 'lr')}`);
  console.log(`bad input: ${tested} checks passed`);
}
