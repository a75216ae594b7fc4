// Appended to a copy of the built site's index.html (scripts/gpu_browser_pack.sh makes gpt2.html):
// GPT-2 in the page as a user runs it. The file at gpt2/model.safetensors (served beside the
// page; scripts/gpu_browser_run.sh has transformers write a random GPT-2 124M there) goes into
// the "Load GPT-2" control; the run it makes fine-tunes on Shakespeare for 100 s (or `train_s=` in the page's query), posting
// the rate and the worker's memory every 10 s (with the most any report gave in those 10 s); then Sample writes its tokens, timed. Posts
// DONE at the end (tools/browser/serve_collect.py collects the lines).
(() => {
  const TRAIN_S = Number(new URLSearchParams(location.search).get('train_s') ?? 100);
  const post = (s) => fetch('/result', {method: 'POST', body: s});
  window.addEventListener('error', (e) => post('page error: ' + e.message));
  const sleep = (ms) => new Promise(r => setTimeout(r, ms));
  const state = () => window.webgrad.state();
  const figures = (s) => JSON.stringify({step: s.step, val_loss: s.val_loss, steps_per_s: s.steps_per_s, memory: s.memory, precision: s.precision, error: s.error});
  (async () => {
    for (let i = 0; i < 300 && !(window.webgrad && window.webgrad.state); i++) await sleep(100);
    while (state().val_loss == null) await sleep(200);
    try {
      const t0 = performance.now();
      const bytes = await (await fetch('gpt2/model.safetensors')).arrayBuffer();
      const input = document.getElementById('gpt2-file');
      const files = new DataTransfer();
      files.items.add(new File([bytes], 'model.safetensors'));
      input.files = files.files;
      input.dispatchEvent(new Event('change'));
      const loaded = (s) => s.lora_rank === 8 && s.step === 0 && s.val_loss != null;
      for (let i = 0; i < 1200 && !loaded(state()) && !state().error; i++) await sleep(100);
      await post(`loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s (fetched ${(bytes.byteLength / 1e6).toFixed(0)} MB): ${figures(state())} ${state().note}`);
      window.webgrad.train();
      const t1 = performance.now();
      // Each progress report gives the most the pool held since the one before: polled every
      // 50 ms (reports come every quarter second or so), the most of a window is its line's
      // `most_gpu_bytes`, with the step it was reported at; a change of the adapter's line
      // (the product timer's sentence) is posted with its step.
      let most = {bytes: 0, step: 0}, adapter = state().adapter;
      for (let next = 10000; performance.now() - t1 < TRAIN_S * 1000;) {
        await sleep(50);
        const s = state(), bytes = (s.memory || {}).gpu_bytes || 0;
        if (bytes > most.bytes) most = {bytes, step: s.step};
        if (s.adapter !== adapter) {
          adapter = s.adapter;
          await post(`adapter at step ${s.step}: ${adapter}`);
        }
        if (performance.now() - t1 >= next) {
          next += 10000;
          await post(`train at ${((performance.now() - t1) / 1000).toFixed(0)} s: ${figures(s)} most_gpu_bytes ${most.bytes} at step ${most.step}`);
          most = {bytes: 0, step: 0};
        }
      }
      window.webgrad.pause();
      await sleep(2000);
      const t2 = performance.now();
      document.getElementById('sample').click();
      const written = () => (state().sampling || [0, 1]);
      await sleep(500);
      for (let i = 0; i < 1200 && written()[0] < written()[1]; i++) await sleep(50);
      await post(`sampled ${JSON.stringify(state().sampling)} in ${((performance.now() - t2) / 1000).toFixed(2)} s`);
      await post('sample: ' + document.getElementById('sample-out').textContent.slice(-300));
    } catch (e) { await post('gpt2 error: ' + e); }
    await post('DONE gpt2');
  })();
})();
