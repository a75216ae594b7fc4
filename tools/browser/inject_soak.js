// Appended to a copy of the built site's index.html (scripts/gpu_browser_pack.sh makes soak.html):
// a long session as a restless user has one. Cycles, until the time is up: the spiral trained,
// downloaded and loaded back; the digits; two task switches while training; the text task (it
// writes samples as it trains); a LoRA fine-tuning on a short text, at whose end (the same run
// in the same state each cycle, on the GPU) each cycle is sampled. Every 20 s it posts the
// worker's GPU pool bytes and WebAssembly memory (state().memory) and the page's JavaScript heap;
// any error shown ends the run. Then forces the GPU device's loss while the digits train and
// posts whether training resumed. Before that, a summary: growth of each figure from the end of
// the warm-up (two cycles) to the end of the last. Duration: #soak=SECONDS in the URL (default 480).
(() => {
  const hash = new URLSearchParams(location.hash.slice(1));
  const TOTAL_S = Number(hash.get('soak') || 480);
  const PHASE_S = Number(hash.get('phase') || 10);
  const SAMPLE_MS = 20000;
  const TEXT = 'Twinkle, twinkle, little star, how I wonder what you are! Up above the world so high, like a diamond in the sky.\n';
  const post = (s) => fetch('/result', { method: 'POST', body: s });
  window.addEventListener('error', (e) => post('page error: ' + e.message));
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const state = () => window.webgrad.state();
  const t0 = performance.now();
  const seconds = () => (performance.now() - t0) / 1000;
  const until = async (what, ok, ms = 120000) => {
    for (const end = performance.now() + ms; performance.now() < end; await sleep(100)) {
      const s = state();
      if (s.error) throw new Error(`${what}: ${s.error}`);
      if (ok(s)) return s;
    }
    throw new Error(`${what}: not within ${ms / 1000} s (${JSON.stringify(state())})`);
  };

  // The page's downloads go through a blob URL: keep the last blob to load it back.
  let lastBlob = null;
  const createObjectURL = URL.createObjectURL;
  URL.createObjectURL = (blob) => { lastBlob = blob; return createObjectURL.call(URL, blob); };

  const samples = [];
  let cycle = 0;
  // The page's JavaScript heap (exact with Chrome's --enable-precise-memory-info, else in
  // coarse steps); the worker's WebAssembly memory is `heap`.
  const pageHeap = () => (performance.memory ? performance.memory.usedJSHeapSize : null);
  const sample = async (end = false) => {
    const s = state();
    const row = { t: Math.round(seconds()), cycle, end, task: s.task, step: s.step, gpu: s.memory.gpu_bytes ?? null, heap: s.memory.heap_bytes, page_js: pageHeap() };
    samples.push(row);
    await post('sample ' + JSON.stringify(row));
  };

  const switchTo = async (task) => {
    window.webgrad.setTask(task);
    await until(`${task} built`, (s) => s.task === task && s.val_loss != null);
  };
  const trainFor = async (s) => { window.webgrad.train(); await sleep(s * 1000); window.webgrad.pause(); await sleep(300); };
  const phases = [
    ['spiral, saved and loaded back', async () => {
      await switchTo('spiral');
      await trainFor(PHASE_S);
      const before = lastBlob;
      document.getElementById('save').click();
      for (let i = 0; i < 300 && lastBlob === before; i++) await sleep(100);
      if (lastBlob === before) throw new Error('the checkpoint was not downloaded');
      const files = new DataTransfer();
      files.items.add(new File([lastBlob], 'soak.safetensors'));
      const load = document.getElementById('load');
      load.files = files.files;
      load.dispatchEvent(new Event('change', { bubbles: true }));
      await until('the checkpoint loaded', (s) => s.loaded && s.loaded[0] === 'soak.safetensors' && s.val_loss != null);
      await trainFor(2);
    }],
    ['digits', async () => { await switchTo('digits'); await trainFor(PHASE_S); }],
    ['two switches while training', async () => {
      await switchTo('moons');
      window.webgrad.train();
      await sleep(2000);
      window.webgrad.setTask('xor');
      await sleep(1000);
      window.webgrad.setTask('circles');
      await until('circles training after two switches', (s) => s.task === 'circles' && s.running && s.step >= 5);
      window.webgrad.pause();
      await sleep(300);
    }],
    ['text, sampling as it trains', async () => { await switchTo('text'); await trainFor(PHASE_S); }],
    ['LoRA on a short text', async () => {
      // Long enough for the largest context the page sizes a GPT to (256 on a large GPU).
      document.getElementById('user-text').value = TEXT.repeat(100);
      document.getElementById('lora-rank').value = '4';
      document.getElementById('lora-start').click();
      await until('the fine-tuning built', (s) => s.lora_rank === 4 && s.val_loss != null && s.base_loss != null);
      await sleep(PHASE_S * 1000);
      window.webgrad.pause();
      await sleep(300);
    }],
  ];

  const loseDevice = async () => {
    // The digits train on the GPU wherever there is one (auto may put the spiral on the CPU).
    await switchTo('digits');
    window.webgrad.train();
    await until('weights kept to resume from', (s) => s.running && s.kept_step > 0);
    window.webgrad.loseDevice();
    const lost = await until('a sentence on the lost device', (s) => (s.note || '').includes('device was lost'), 60000);
    const from = Number((lost.note.match(/from step (\d+)/) || [])[1]);
    const after = await until('training after the new device', (s) => s.running && s.step >= from + 20 && s.val_loss != null, 120000);
    window.webgrad.pause();
    await post(`device loss: ${lost.note} Then step ${after.step}, val loss ${after.val_loss.toFixed(3)}, adapter: ${after.adapter}`);
  };

  // Growth of a figure after the warm-up (the first WARM_UP cycles: WebAssembly memory grows to
  // its allocator's high-water mark over the first two, and never shrinks): sampled at the end
  // of each cycle (the same run in the same state), the last cycle's over the warm-up's last;
  // and the largest sample after the warm-up over the largest during it.
  const WARM_UP = 2;
  const growth = (key) => {
    const ends = samples.filter((r) => r.end && r[key] != null);
    const during = samples.filter((r) => r.cycle <= WARM_UP && r[key] != null).map((r) => r[key]);
    const after = samples.filter((r) => r.cycle > WARM_UP && r[key] != null).map((r) => r[key]);
    if (ends.length <= WARM_UP || !after.length) return { key, growth: null };
    const [warm, end] = [ends[WARM_UP - 1][key], ends[ends.length - 1][key]];
    return { key, cycles: ends.length, warm_up_end: warm, end, growth: +(end / warm - 1).toFixed(4), peak_growth: +(Math.max(...after) / Math.max(...during) - 1).toFixed(4) };
  };

  (async () => {
    for (let i = 0; i < 300 && !(window.webgrad && window.webgrad.state); i++) await sleep(100);
    await sleep(1500);
    await post(`soak: ${TOTAL_S} s, phases of ${PHASE_S} s, on ${state().adapter}`);
    const sampler = setInterval(sample, SAMPLE_MS);
    try {
      await sample();
      while (seconds() < TOTAL_S) {
        cycle += 1;
        for (const [name, run] of phases) {
          await run();
          await post(`cycle ${cycle}: ${name} at ${seconds().toFixed(0)} s, step ${state().step}`);
        }
        await sample(true);
      }
      clearInterval(sampler);
      await post('summary ' + JSON.stringify(['gpu', 'heap', 'page_js'].map(growth)));
      await loseDevice();
    } catch (e) {
      clearInterval(sampler);
      await post(`soak error at ${seconds().toFixed(0)} s, cycle ${cycle}: ${e.message}`);
    }
    await post('DONE soak');
  })();
})();
