// Appended to a copy of the built site's index.html (scripts/gpu_browser_pack.sh makes
// frames.html): for each task on its defaults, trains for a fixed wall time while counting the
// page's animation frames, and posts the frames drawn, the longest wait between two of them
// (a frozen page shows as a long wait), the steps trained and the adapter, then DONE.
(() => {
  const TRAIN_S = 10;
  const post = (s) => fetch('/result', {method: 'POST', body: s});
  window.addEventListener('error', (e) => post('page error: ' + e.message));
  const sleep = (ms) => new Promise(r => setTimeout(r, ms));
  // The playground starts the MLP at a pace a person can watch (30 steps a second): these
  // figures are of the loop as fast as it goes.
  const maxSpeed = () => { const s = document.getElementById('speed'); s.value = 'max'; s.dispatchEvent(new Event('change')); };
  const state = () => window.webgrad.state();
  // Frame gaps over `ms`: resolves to [frames, longest gap, 95th percentile gap].
  const frames = (ms) => new Promise((done) => {
    const gaps = []; let last = performance.now(); const end = last + ms;
    const frame = (now) => {
      gaps.push(now - last); last = now;
      if (now < end) return requestAnimationFrame(frame);
      gaps.sort((a, b) => a - b);
      done([gaps.length, gaps[gaps.length - 1], gaps[Math.floor(0.95 * (gaps.length - 1))]]);
    };
    requestAnimationFrame(frame);
  });
  (async () => {
    for (let i = 0; i < 300 && !(window.webgrad && window.webgrad.state); i++) await sleep(100);
    await sleep(1500);
    for (const task of ['spiral', 'digits', 'text']) {
      try {
        window.webgrad.setTask(task);
        const ready = (s) => s.task === task && s.step === 0 && s.val_loss != null;
        for (let i = 0; i < 1200 && !ready(state()); i++) await sleep(100);
        const s0 = state();
        maxSpeed(); window.webgrad.train();
        const [n, longest, p95] = await frames(TRAIN_S * 1000);
        const s = state();
        window.webgrad.pause();
        await post('frames ' + task + ': ' + JSON.stringify({
          frames_per_s: +(n / TRAIN_S).toFixed(1), longest_gap_ms: +longest.toFixed(1),
          p95_gap_ms: +p95.toFixed(1), steps: s.step - s0.step, steps_per_s: +((s.step - s0.step) / TRAIN_S).toFixed(1),
          val_loss: s.val_loss, note: s.note, adapter: s.adapter, error: s.error}));
        await sleep(1000);
      } catch (e) { await post('frames error ' + task + ': ' + e); }
    }
    await post('DONE frames');
  })();
})();
