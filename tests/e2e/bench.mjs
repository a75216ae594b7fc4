// Opens the page's bench mode in headless Chromium (WebGPU on SwiftShader) and prints its
// lines as they come, the same lines as `webgrad bench`. Exits 1 if the benchmark fails.
// Usage: node bench.mjs URL WORKLOADS [MORE] (comma-separated name prefixes; MORE is appended to
// the query, e.g. "&profile=1")

import { chromium } from 'playwright-core';

const [url, only, more = ''] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const page = await browser.newPage();
page.on('pageerror', (e) => console.error(`page error: ${e.message}`));
await page.goto(`${url}?bench=1&only=${encodeURIComponent(only)}${more}`);
let printed = 0;
const deadline = Date.now() + 30 * 60 * 1000;
for (;;) {
  if (Date.now() > deadline) {
    console.error('the benchmark did not finish within 30 minutes');
    process.exit(1);
  }
  const s = await page.evaluate(() => window.webgrad && window.webgrad.bench());
  for (const line of (s?.lines ?? []).slice(printed)) console.log(line);
  printed = s?.lines?.length ?? 0;
  if (s?.done) {
    await browser.close();
    if (s.error) {
      console.error(`the benchmark stopped: ${s.error}`);
      process.exit(1);
    }
    break;
  }
  await new Promise((r) => setTimeout(r, 500));
}
