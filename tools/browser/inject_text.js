// Appended to a copy of the built site's index.html (scripts/gpu_browser_pack.sh makes text.html):
// the playground's text task on its defaults, as a user runs it. The size is on auto, so the
// page first sizes the GPT to this GPU; then it trains for two minutes of wall time. Posts the
// sizing sentence, a snapshot every 5 s, when the validation loss first went below 1.65 nats,
// and a sample, then DONE (tools/browser/serve_collect.py collects them).
(() => {
  const TRAIN_S = 120, TARGET = 1.65;
  const post = (s) => fetch('/result', {method: 'POST', body: s});
  window.addEventListener('error', (e) => post('page error: ' + e.message));
  const sleep = (ms) => new Promise(r => setTimeout(r, ms));
  const state = () => window.webgrad.state();
  (async () => {
    for (let i = 0; i < 300 && !(window.webgrad && window.webgrad.state); i++) await sleep(100);
    await sleep(1500);
    try {
      const t_set = performance.now();
      window.webgrad.setTask('text');
      const ready = (s) => s.task === 'text' && s.step === 0 && s.val_loss != null && (s.note || '').startsWith('Sized');
      while (!ready(state())) await sleep(200);
      await post('sized in ' + ((performance.now() - t_set) / 1000).toFixed(1) + ' s: ' + state().note);
      window.webgrad.train();
      const t0 = performance.now();
      let reached = null, next = 5000;
      while (performance.now() - t0 < TRAIN_S * 1000) {
        await sleep(250);
        const s = state(), t = performance.now() - t0;
        if (reached === null && s.val_loss != null && s.val_loss < TARGET) {
          reached = {s: +(t / 1000).toFixed(1), step: s.step, val_loss: s.val_loss};
        }
        if (t >= next) {
          next += 5000;
          await post('at ' + (t / 1000).toFixed(0) + ' s: ' + JSON.stringify({step: s.step, train_loss: s.train_loss, val_loss: s.val_loss, steps_per_s: s.steps_per_s, note: s.note, error: s.error}));
        }
      }
      window.webgrad.pause();
      await sleep(1000);
      await post('after ' + TRAIN_S + ' s: ' + JSON.stringify({state: state(), below_target: reached}));
      document.getElementById('sample').click();
      for (let i = 0; i < 60 && document.getElementById('sample-out').textContent.length < 400; i++) await sleep(500);
      await sleep(2000);
      await post('sample: ' + document.getElementById('sample-out').textContent);
    } catch (e) { await post('text error: ' + e); }
    await post('DONE text');
  })();
})();
