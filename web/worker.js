// The training worker's start: it loads the page's own WebAssembly module (the page sends the
// URLs of its script and its .wasm first) and runs the module's worker entry point, which owns
// the GPU device and the training loop. Requests that come while the module loads wait here and
// are handed on once the module listens.
const early = [];
self.onmessage = async (first) => {
  self.onmessage = (e) => early.push(e);
  try {
    const { glue, wasm } = first.data;
    const module = await import(glue);
    await module.default({ module_or_path: wasm });
    module.worker_main();
    for (const e of early) self.onmessage(e);
  } catch (e) {
    self.postMessage({ run: 0, ask: 0, report: { Failed: `The training worker could not start: ${e}` } });
  }
};
