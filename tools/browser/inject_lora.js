// Appended to a copy of the built site's index.html (scripts/gpu_browser_pack.sh makes lora.html):
// LoRA fine-tuning as a user runs it. The text task on its defaults (the size on auto, so the
// page sizes the GPT to this GPU) trains on Shakespeare for a minute; then a short text in the
// same characters goes in the text box and "Fine-tune on your text" starts a LoRA run of rank 8,
// which trains for a minute. Posts the rates and both validation losses every 10 s, the sample
// taken before the fine-tuning and one after, then DONE (tools/browser/serve_collect.py
// collects them).
(() => {
  const BASE_S = 60, TUNE_S = 60;
  const TEXT = 'Twinkle, twinkle, little star, how I wonder what you are! Up above the world so high, like a diamond in the sky.\n';
  const post = (s) => fetch('/result', {method: 'POST', body: s});
  window.addEventListener('error', (e) => post('page error: ' + e.message));
  const sleep = (ms) => new Promise(r => setTimeout(r, ms));
  const state = () => window.webgrad.state();
  const figures = (s) => JSON.stringify({step: s.step, val_loss: s.val_loss, base_loss: s.base_loss, steps_per_s: s.steps_per_s, error: s.error});
  const trainFor = async (label, seconds) => {
    window.webgrad.train();
    const t0 = performance.now();
    for (let next = 10000; performance.now() - t0 < seconds * 1000;) {
      await sleep(250);
      if (performance.now() - t0 >= next) {
        next += 10000;
        await post(`${label} at ${((performance.now() - t0) / 1000).toFixed(0)} s: ${figures(state())}`);
      }
    }
    window.webgrad.pause();
    await sleep(1000);
  };
  (async () => {
    for (let i = 0; i < 300 && !(window.webgrad && window.webgrad.state); i++) await sleep(100);
    await sleep(1500);
    try {
      window.webgrad.setTask('text');
      const sized = (s) => s.task === 'text' && s.step === 0 && s.val_loss != null && (s.note || '').startsWith('Sized');
      while (!sized(state())) await sleep(200);
      await post('sized: ' + state().note);
      await trainFor('base', BASE_S);
      document.getElementById('user-text').value = TEXT.repeat(40);
      document.getElementById('lora-rank').value = '8';
      document.getElementById('prompt').value = 'Twinkle';
      document.getElementById('lora-start').click();
      const tuning = (s) => s.lora_rank === 8 && s.step === 0 && s.val_loss != null && s.base_loss != null;
      for (let i = 0; i < 600 && !tuning(state()) && !state().error; i++) await sleep(100);
      await post('fine-tuning: ' + figures(state()) + ' ' + state().note);
      await post('before: ' + document.getElementById('lora-before').textContent);
      await trainFor('lora', TUNE_S);
      document.getElementById('sample').click();
      for (let i = 0; i < 60 && document.getElementById('sample-out').textContent.length < 200; i++) await sleep(500);
      await sleep(1000);
      await post('after: ' + document.getElementById('sample-out').textContent);
    } catch (e) { await post('lora error: ' + e); }
    await post('DONE lora');
  })();
})();
