// Appended to a copy of the built site's index.html: trains the spiral on its defaults for a
// fixed wall time with the Backend control on auto, GPU and CPU in turn, and posts what the
// page said of the backend and the steps per second each reached.
(() => {
  const post = (s) => fetch('/result', {method: 'POST', body: s});
  window.addEventListener('error', (e) => post('page error: ' + e.message));
  const sleep = (ms) => new Promise(r => setTimeout(r, ms));
  // The playground starts the MLP at a pace a person can watch (30 steps a second): these
  // figures are of the loop as fast as it goes.
  const maxSpeed = () => { const s = document.getElementById('speed'); s.value = 'max'; s.dispatchEvent(new Event('change')); };
  (async () => {
    for (let i = 0; i < 200 && !(window.webgrad && window.webgrad.state); i++) await sleep(100);
    await sleep(1500);
    for (const backend of ['auto', 'gpu', 'cpu']) {
      try {
        const select = document.getElementById('backend');
        select.value = backend;
        select.dispatchEvent(new Event('change'));
        window.webgrad.setTask('spiral');
        await sleep(3000);
        const start = window.webgrad.state();
        maxSpeed(); window.webgrad.train();
        await sleep(8000);
        window.webgrad.pause();
        await sleep(500);
        const end = window.webgrad.state();
        await post(`backend ${backend}: ` + JSON.stringify({note: start.note, steps: end.step, steps_per_s: end.steps_per_s, val_loss: end.val_loss}));
      } catch (e) { await post(`backend ${backend} error: ${e}`); }
    }
    await post('DONE backends');
  })();
})();
