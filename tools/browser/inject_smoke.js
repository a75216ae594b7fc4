// Appended to a copy of the built site's index.html (tests/e2e/firefox.sh makes smoke.html): the
// playground's tasks as a user tries them, for a browser no test library drives (Firefox ESR).
// Each task on its defaults trains until its validation loss falls below LEARNED of its first
// evaluation's; the views the task shows must have drawn (a canvas whose pixels are not all
// the same); then GPT-2 loads, samples and fine-tunes. Posts one line a task ("ok TASK …" or
// "fail TASK …"), the adapter, then DONE
// (tools/browser/serve_collect.py collects them).
(() => {
  const LEARNED = 0.8;
  const TASK_S = Number(new URLSearchParams(location.hash.slice(1)).get('task_s') || 240);
  const VIEWS = { spiral: ['boundary', 'network', 'loss-chart'], digits: ['digit-grid', 'confusion', 'loss-chart'], text: ['attention', 'loss-chart'] };
  const post = (s) => fetch('/result', { method: 'POST', body: s });
  window.addEventListener('error', (e) => post(`fail page error: ${e.message}`));
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const state = () => window.webgrad.state();
  const drew = (id) => {
    const c = document.getElementById(id);
    if (!c || !c.width || !c.height) return false;
    const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 4; i < px.length; i += 4) {
      if (px[i] !== px[0] || px[i + 1] !== px[1] || px[i + 2] !== px[2] || px[i + 3] !== px[3]) return true;
    }
    return false;
  };
  const until = async (ok, s) => {
    for (const end = performance.now() + s * 1000; performance.now() < end; await sleep(200)) {
      if (state().error) return false;
      if (ok(state())) return true;
    }
    return false;
  };
  const tryTask = async (task) => {
    window.webgrad.setTask(task);
    if (!await until((s) => s.task === task && s.step === 0 && s.val_loss != null, TASK_S)) {
      return `fail ${task}: no first evaluation (${JSON.stringify(state())})`;
    }
    const first = state().val_loss;
    window.webgrad.train();
    const learned = await until((s) => s.val_loss != null && s.val_loss < LEARNED * first, TASK_S);
    window.webgrad.pause();
    await sleep(1000);
    const s = state();
    if (!learned) return `fail ${task}: validation loss ${first} to ${s.val_loss} at step ${s.step}, error ${s.error}`;
    const blank = VIEWS[task].filter((id) => !drew(id));
    if (blank.length) return `fail ${task}: ${blank.join(', ')} drew nothing`;
    return `ok ${task}: validation loss ${first.toFixed(3)} to ${s.val_loss.toFixed(3)} at step ${s.step}, ${s.steps_per_s?.toFixed(0)} steps/s, backend ${s.backend ?? 'chosen'}`;
  };
  // GPT-2 (a tiny one made here by gpt2_file.js) through the GPT-2 control: it loads as a LoRA
  // run, writes a sample and fine-tunes a few steps.
  const tryGpt2 = async () => {
    window.chooseFile('gpt2-file', window.tinyGpt2File());
    const loaded = (s) => s.lora_rank === 8 && s.step === 0 && s.val_loss != null && (s.note || '').startsWith('GPT-2 loaded');
    if (!await until(loaded, TASK_S)) return `fail gpt2: not loaded (${JSON.stringify(state())})`;
    document.getElementById('sample').click();
    if (!await until((s) => s.sampling && s.sampling[0] >= 10, TASK_S)) return `fail gpt2: no sample (${JSON.stringify(state())})`;
    window.webgrad.train();
    const trained = await until((s) => s.step >= 3, TASK_S);
    window.webgrad.pause();
    const s = state();
    if (!trained) return `fail gpt2: no fine-tuning step (${JSON.stringify(s)})`;
    return `ok gpt2: loaded, sampled and fine-tuned to step ${s.step}, validation ${s.val_loss.toFixed(3)}`;
  };
  (async () => {
    for (let i = 0; i < 600 && !(window.webgrad && window.webgrad.state && state().adapter); i++) await sleep(100);
    await post(`adapter: ${state().adapter} · ${navigator.userAgent}`);
    for (const task of ['spiral', 'digits', 'text']) {
      try { await post(await tryTask(task)); } catch (e) { await post(`fail ${task}: ${e}`); }
    }
    try { await post(await tryGpt2()); } catch (e) { await post(`fail gpt2: ${e}`); }
    await post('DONE smoke');
  })();
})();
