// The soak run (tools/browser/inject_soak.js) in headless Chromium on SwiftShader, as the GPU
// machine runs it in Chrome (scripts/gpu_browser_run.sh, PARTS=soak): a copy of the built site
// with the driver script, served by tools/browser/serve_collect.py, which writes what the page
// posts to OUTPUT_DIR/soak.txt. Not part of the test command: it takes as long as asked.
// Usage: node soak.mjs SITE_DIR OUTPUT_DIR SECONDS [PHASE_SECONDS]

import { spawn } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { open } from './lib.mjs';

const [site, out, seconds, phase = '10'] = process.argv.slice(2);
const here = new URL('../../tools/browser/', import.meta.url).pathname;
const copy = `${out}/site`;
rmSync(copy, { recursive: true, force: true });
cpSync(site, copy, { recursive: true });
cpSync(`${here}/inject_soak.js`, `${copy}/inject_soak.js`);
const index = readFileSync(`${site}/index.html`, 'utf8');
writeFileSync(`${copy}/soak.html`, index.replace('</body>', '<script src="inject_soak.js"></script></body>'));

const port = 8700 + Math.floor(Math.random() * 200);
const collector = spawn('python3', [`${here}/serve_collect.py`, copy, `${port}`, `${out}/soak.txt`, '1', `${Number(seconds) + 600}`], { stdio: 'inherit' });
await new Promise((r) => setTimeout(r, 1000));
const t = await open(out);
await t.page.goto(`http://127.0.0.1:${port}/soak.html#soak=${seconds}&phase=${phase}`);
const code = await new Promise((r) => collector.on('exit', r));
const posted = readFileSync(`${out}/soak.txt`, 'utf8');
if (code !== 0 || !posted.includes('DONE soak')) await t.fail(`the soak run did not finish (collector exit ${code})`);
if (posted.includes('soak error')) await t.fail(posted.split('\n').find((l) => l.includes('soak error')));
console.log(posted.split('\n').filter((l) => l.startsWith('summary') || l.startsWith('device loss')).join('\n'));
await t.done();
