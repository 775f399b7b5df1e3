// `npm run bench startup`: how long `pier` takes to start, against `node -e 0` in the same run:
// `pier --help`, `pier staff list` (a data dir with a few products) and `pier serve` until every
// part listens ("Pier is running"). Targets: --help <= 4x, staff list <= 6x, serve ready <= 25x.
// Each row runs the compiled program (dist/server, as `pier` runs) and, for comparison, the
// TypeScript sources through tsx (PIER_FROM_SOURCE=1: how every `pier` started before the build).
// BENCH_ROUNDS runs of each (default 5); medians.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { currentBuild } from '../scripts/build-state.mjs';
import { freePort, tempDir } from './lib.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PRODUCTS = 5;

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

export async function benchStartup(): Promise<string> {
  if (!currentBuild(process.cwd()).entry) throw new Error('the program is not built: run `npm run build` first');
  const dataDir = tempDir('pier-bench-startup-');
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
      lines.push(`${row.what.padEnd(18)} ${cells.join(' ')}   ${row.target === null ? '' : `<= ${row.target}x ${built <= row.target ? 'ok' : 'MISSED'}`}`);
    }
    return lines.join('\n');
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
