// The runner's web UI (issue: a UI row in `npm run bench`):
//  1. the JavaScript it ships, gzipped, against its budget of 150 KB;
//  2. the time from opening a run's page to its last line showing, for a 200,000-line log, in
//     headless Chromium, against the floor: the same bytes served as one text/plain file and
//     shown by the browser itself (no parsing, no layout beyond a <pre>). Median of a few loads.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readUiManifest } from '../src/runner/web/ui-build.js';
import { launchChromium, signIn, startUiRunner } from '../test/runner/ui/harness.js';
import { Seeder } from '../test/runner/ui/runs-seed.js';

const LINES = Number(process.env.BENCH_UI_LINES ?? 200_000);
const LOADS = Number(process.env.BENCH_UI_LOADS ?? 3);
const BUDGET = 150 * 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function benchRunnerUi(): Promise<string> {
  if (!fs.existsSync('/usr/bin/chromium')) return 'skipped: /usr/bin/chromium is not installed';
  const manifest = readUiManifest();
  if (!manifest) return 'skipped: the UI is not built (npm run build:ui)';
  const ui = await startUiRunner();
  const browser = await launchChromium();
  const lines = Array.from({ length: LINES }, (_, i) => `line ${i + 1} of the big log: some text to make it look real`);
  const text = `${lines.join('\n')}\n`;
  const plain = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(text));
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    const seed = await new Seeder(ui).init();
    const run = await seed.startRunning();
    const chunks: string[] = [];
    for (let i = 0; i < text.length; i += 16_384) chunks.push(text.slice(i, i + 16_384));
    for (let i = 0; i < chunks.length; i += 200) await seed.log(run.id, run.lease, chunks.slice(i, i + 200), i + 1);
    await seed.finish(run.id, run.lease, 'succeeded');
    const last = `line ${LINES} of the big log`;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await signIn(page, ui.base);
    const ours: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < LOADS; i++) {
      await page.goto('about:blank');
      let t = performance.now();
      await page.goto(`${ui.base}/runs/${run.id}`);
      await page.locator('.log-line', { hasText: last }).waitFor({ timeout: 120_000 });
      ours.push(performance.now() - t);
      await page.goto('about:blank');
      t = performance.now();
      await page.goto(`http://127.0.0.1:${(plain.address() as AddressInfo).port}/log.txt`);
      await page.getByText(last).waitFor({ timeout: 120_000 });
      floor.push(performance.now() - t);
    }
    await context.close();
    const ms = (xs: number[]) => `${Math.round(median(xs))} ms (${xs.map((x) => Math.round(x)).join(', ')})`;
    const ratio = median(ours) / median(floor);
    return [
      `JavaScript shipped: ${(manifest.jsGzipBytes / 1024).toFixed(1)} KB gzipped; budget 150 KB: ${(manifest.jsGzipBytes / BUDGET).toFixed(2)} of it (${manifest.jsGzipBytes <= BUDGET ? 'PASS' : 'FAIL'})`,
      `${LINES.toLocaleString('en')}-line log (${chunks.length} chunks of 16 KiB), last line shown, median of ${LOADS}:`,
      `  run page (API + live log, virtualised): ${ms(ours)}`,
      `  floor: the same text as text/plain:      ${ms(floor)}`,
      `  ratio ours / floor: ${ratio.toFixed(2)}`,
    ].join('\n');
  } finally {
    plain.close();
    await browser.close();
    await ui.close();
  }
}
