// `npm run bench startup`: how long `pier` takes to start, against `node -e 0` in the same run:
// `pier --help`, `pier staff list` (a data dir with a few products) and `pier serve` until every
// part listens ("Pier is running"), and `pier staff crawl` of a small published site (the example
// site: 9 files, 4 nodes) against a running `pier serve`. Targets: --help <= 4x, staff list <= 6x,
// serve ready <= 25x, staff crawl about a second plus the crawl itself (<= 1.5 s here).
// Each row runs the compiled program (dist/server, as `pier` runs) and, for comparison, the
// TypeScript sources through tsx (PIER_FROM_SOURCE=1: how every `pier` started before the build).
// BENCH_ROUNDS runs of each (default 5); medians.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { currentBuild } from '../scripts/build-state.mjs';
import { buildSite, exampleSpec } from '../test/helpers/p2-fixtures.js';
import { freePort, tempDir, waitForPier } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PRODUCTS = 5;
/** `pier staff crawl` of the example site: about a second plus the crawl itself. */
const CRAWL_TARGET_MS = 1500;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function timed(args: string[], env: NodeJS.ProcessEnv): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} failed: ${r.stderr}`);
  return ms;
}

/** `pier serve` (every part) from its start until it prints that every part listens; then stopped. */
async function serveReady(env: NodeJS.ProcessEnv): Promise<number> {
  const ports = { PIER_HTTP_PORT: await freePort(), PIER_DOWNLOAD_PORT: await freePort(), PIER_SFTP_PORT: await freePort(), RUNNER_PORT: await freePort() };
  const t0 = performance.now();
  const child = spawn(process.execPath, ['bin/pier.js', 'serve'], {
    env: { ...process.env, ...env, ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])), PIER_DRAIN_DELAY_SECONDS: '0' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  const ms = await new Promise<number>((resolve, reject) => {
    child.stderr.on('data', (d) => {
      text += d;
      if (text.includes('Pier is running')) resolve(performance.now() - t0);
    });
    child.once('exit', () => reject(new Error(`pier serve ended before it was ready: ${text}`)));
  });
  child.removeAllListeners('exit');
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
  return ms;
}

/**
 * A running `pier serve` (web, downloads, SFTP) with the example site published as label 1.0 of
 * product `egon` by `pier publish`; `pier staff crawl egon --label 1.0` then crawls it again.
 */
async function publishedSite(work: string): Promise<{ env: NodeJS.ProcessEnv; stop: () => Promise<void> }> {
  const [http, downloads, sftp] = [await freePort(), await freePort(), await freePort()];
  const env = {
    PIER_DATA_DIR: path.join(work, 'data'),
    PIER_LOG_LEVEL: 'warn',
    PIER_HTTP_PORT: String(http),
    PIER_DOWNLOAD_PORT: String(downloads),
    PIER_SFTP_PORT: String(sftp),
    PIER_SFTP_HOST: '127.0.0.1',
    PIER_BASE_URL: `http://127.0.0.1:${http}`,
    PIER_DOWNLOAD_URL: `http://127.0.0.1:${downloads}`,
    PIER_CRAWL_SETTLE_SECONDS: '0',
  };
  const r = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', 'egon', '--name', 'Egon', '--json'], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pier staff register failed: ${r.stderr}`);
  const creds = JSON.parse(r.stdout) as { editToken: string; sftp: { password: string } };
  const server = spawn(process.execPath, ['bin/pier.js', 'serve', '--only', 'web,downloads,sftp'], { env: { ...process.env, ...env }, stdio: 'ignore' });
  const stop = async () => {
    const gone = new Promise((done) => server.once('exit', done));
    server.kill('SIGTERM');
    await gone;
  };
  try {
    await waitForPier(`http://127.0.0.1:${http}/healthz`, sftp);
    const site = path.join(work, 'site');
    buildSite(site, exampleSpec('jar'));
    const p = spawnSync(process.execPath, ['bin/pier.js', 'publish', '--server', env.PIER_BASE_URL, '--product', 'egon', '--label', '1.0', '--site', site], {
      env: { ...process.env, HOME: work, XDG_CONFIG_HOME: path.join(work, '.config'), PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: creds.sftp.password },
      encoding: 'utf8',
    });
    if (p.status !== 0) throw new Error(`pier publish failed: ${p.stdout}${p.stderr}`);
    return { env, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

export async function benchStartup(): Promise<string> {
  if (!currentBuild(process.cwd()).entry) throw new Error('the program is not built: run `npm run build` first');
  const work = tempDir('pier-bench-startup-');
  const dataDir = path.join(work, 'list');
  try {
    const data = { PIER_DATA_DIR: dataDir, PIER_LOG_LEVEL: 'warn' };
    for (let i = 0; i < PRODUCTS; i++) {
      const r = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'register', `startup-${i}`, '--name', `Startup ${i}`, '--json'], { env: { ...process.env, ...data }, encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`pier staff register failed: ${r.stderr}`);
    }
    const modes = [
      { name: 'built (dist/server)', env: { PIER_FROM_SOURCE: '' } },
      { name: 'sources via tsx (before)', env: { PIER_FROM_SOURCE: '1' } },
    ];
    const rows: { what: string; target: number | null; ms: Record<string, number> }[] = [
      { what: 'node -e 0', target: null, ms: {} },
      { what: 'pier --help', target: 4, ms: {} },
      { what: 'pier staff list', target: 6, ms: {} },
      { what: 'pier serve ready', target: 25, ms: {} },
      { what: 'pier staff crawl', target: null, ms: {} },
    ];
    const samples = new Map<string, number[]>();
    const add = (key: string, ms: number) => samples.set(key, [...(samples.get(key) ?? []), ms]);
    // Interleaved rounds: a burst of load on the machine hits every row alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of modes) {
        add(`node -e 0|${mode.name}`, timed(['-e', '0'], {}));
        add(`pier --help|${mode.name}`, timed(['bin/pier.js', '--help'], mode.env));
        add(`pier staff list|${mode.name}`, timed(['bin/pier.js', 'staff', 'list'], { ...mode.env, ...data }));
        add(`pier serve ready|${mode.name}`, await serveReady({ ...mode.env, ...data }));
      }
    }
    // The crawl row: one running server, each round crawls the published label again.
    const site = await publishedSite(work);
    try {
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of modes) add(`pier staff crawl|${mode.name}`, timed(['bin/pier.js', 'staff', 'crawl', 'egon', '--label', '1.0'], { ...mode.env, ...site.env }));
      }
    } finally {
      await site.stop();
    }
    for (const row of rows) for (const mode of modes) row.ms[mode.name] = median(samples.get(`${row.what}|${mode.name}`)!);
    const node = rows[0]!.ms[modes[0]!.name]!;
    const lines = [`medians of ${ROUNDS} runs; ratio to node -e 0 (${node.toFixed(0)} ms)`];
    lines.push(`${''.padEnd(18)} ${modes.map((m) => m.name.padStart(26)).join(' ')}   target`);
    for (const row of rows) {
      const cells = modes.map((m) => {
        const ms = row.ms[m.name]!;
        return `${ms.toFixed(0).padStart(6)} ms ${(ms / node).toFixed(1).padStart(6)}x`.padStart(26);
      });
      const built = row.ms[modes[0]!.name]! / node;
      const verdict =
        row.what === 'pier staff crawl'
          ? `<= ${CRAWL_TARGET_MS} ms ${row.ms[modes[0]!.name]! <= CRAWL_TARGET_MS ? 'ok' : 'MISSED'}`
          : row.target === null
            ? ''
            : `<= ${row.target}x ${built <= row.target ? 'ok' : 'MISSED'}`;
      lines.push(`${row.what.padEnd(18)} ${cells.join(' ')}   ${verdict}`);
    }
    return lines.join('\n');
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
