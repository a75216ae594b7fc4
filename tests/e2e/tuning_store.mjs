// What autotuning measured on a GPU is kept in the browser's storage and handed to the
// training worker in its URL on the next visit (src/app/tuning_store.rs), so that it measures
// nothing again: with a remembered line in storage, the worker's URL carries it whole, and
// the page trains as usual. (SwiftShader is emulated, so nothing is measured here; the H100
// runs in docs/BENCHMARKS.md show the measuring half.) Usage: node tuning_store.mjs URL OUTPUT_DIR

import { open, firstEvaluation } from './lib.mjs';

const [url, out] = process.argv.slice(2);
const t = await open(out);
const { page, state, fail } = t;
const remembered = 'v4 Some GPU [10de:2330] Vulkan 580 Tint\t132\n';
const workers = [];
page.on('worker', (w) => workers.push(w.url()));
await page.addInitScript((line) => localStorage.setItem('webgrad-tuning', line), remembered);
await page.goto(`${url}?task=spiral`);
await firstEvaluation(t);
const worker = workers.find((u) => u.includes('worker.js'));
if (!worker) await fail(`no training worker was seen (${workers.join(', ')})`);
const carried = new URL(worker).searchParams.get('tuned');
if (carried !== remembered) await fail(`the worker's URL carries ${JSON.stringify(carried)}, not the remembered ${JSON.stringify(remembered)}`);
const s = await state();
if (s.error) await fail(`an error is shown: ${s.error}`);
console.log(`tuning store: the worker got the remembered line (${worker.length} characters of URL)`);
await t.done();
