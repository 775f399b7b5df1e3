// An output flood against a real `pier runner executor` (the attack of `yes | head -c 3G`):
//  1. the executor's peak RSS (VmHWM) while a command prints BENCH_FLOOD_BYTES (default 1G)
//     as fast as it can, against the limit of 300 MiB; the runner keeps RUNNER_MAX_LOG_BYTES
//     (default 256M) of it and the executor stops sending once told the log is full;
//  2. how long a cancel of a run printing without end takes to end it, and how long a second
//     SIGTERM takes to end the executor holding such a run (the backlog is dropped, not shipped).
// The runner runs in this process on SQLite; the executor is its own process, as in production.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/infra/config.js';
import { createRunnerService } from '../src/runner/service.js';
import { makeZip } from '../test/runner/helpers.js';
import { SETUP_TOKEN, tempDir } from './lib.js';

const FLOOD_BYTES = process.env.BENCH_FLOOD_BYTES ?? '1G';
const LOG_LIMIT = process.env.BENCH_FLOOD_LOG_LIMIT ?? '256M';
const RSS_LIMIT_MIB = 300;
const API_KEY = 'bench-admin-key-0123456789abcdef';
const MiB = 1024 * 1024;

/** Resident and peak resident memory of a process (Linux /proc), in MiB. */
function memory(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

async function until(check: () => Promise<boolean> | boolean, what: string, ms = 600_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function executor(base: string, work: string, command: string): ChildProcess & { output: string[] } {
  const child = spawn(process.execPath, ['bin/pier.js', 'runner', 'executor', '--url', base, '--name', 'flood', '--work-dir', work, '--command', command, '--kill-grace', '5'], {
    env: { ...process.env, PIER_EXECUTOR_API_KEY: API_KEY },
    stdio: ['ignore', 'pipe', 'pipe'],
  }) as ChildProcess & { output: string[] };
  child.output = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => child.output.push(d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => child.output.push(d));
  return child;
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once('exit', () => resolve()));

export async function benchRunnerFlood(): Promise<string> {
  const dataDir = tempDir('pier-bench-flood-');
  const work = tempDir('pier-bench-flood-work-');
  const config = loadConfig({
    PIER_DATA_DIR: dataDir,
    PIER_LOG_LEVEL: 'silent',
    API_KEY,
    RUNNER_URL: 'http://127.0.0.1',
    RUNNER_SETUP_TOKEN: SETUP_TOKEN,
    RUNNER_MAX_LOG_BYTES: LOG_LIMIT,
    // Heartbeats every 5 s: a cancel is heard within that.
    RUNNER_LEASE_SECONDS: '15',
  });
  const service = await createRunnerService(config, {});
  const started: ChildProcess[] = [];
  try {
    const base = await service.app.listen({ host: '127.0.0.1', port: 0 });
    const session = (await (await fetch(`${base}/api/setup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ setupToken: SETUP_TOKEN, email: 'b@example.com', password: 'bench password 123' }) })).json()) as { session: { token: string } };
    const bearer = { authorization: `Bearer ${session.session.token}` };
    const call = async <T>(method: string, p: string, body?: unknown): Promise<T> =>
      (await (await fetch(`${base}${p}`, { method, headers: { ...bearer, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined })).json()) as T;
    const project = await call<{ id: string }>('POST', '/api/projects', { name: 'flood' });
    const form = new FormData();
    form.set('file', new Blob([new Uint8Array(makeZip())]), 'w.knwf');
    const wf = (await (await fetch(`${base}/api/projects/${project.id}/workflows`, { method: 'POST', headers: bearer, body: form })).json()) as { id: string };
    const status = async (id: string) => (await call<{ status: string }>('GET', `/api/runs/${id}`)).status;
    const storedBytes = async (id: string) => {
      let bytes = 0;
      let after = '0';
      for (;;) {
        const page = await call<{ items: { text: string }[]; nextAfter: string }>('GET', `/api/runs/${id}/logs?after=${after}&limit=1000`);
        if (page.items.length === 0) return bytes;
        for (const item of page.items) bytes += Buffer.byteLength(item.text);
        after = page.nextAfter;
      }
    };

    // 1. A flood of FLOOD_BYTES: the executor's peak memory.
    const flood = executor(base, path.join(work, 'a'), `yes | head -c ${FLOOD_BYTES}`);
    started.push(flood);
    await until(() => flood.output.join('').includes('"event":"registered"'), 'the executor to register');
    const quiet = memory(flood.pid!).rss;
    const t0 = Date.now();
    const run = await call<{ id: string }>('POST', `/api/workflows/${wf.id}/runs`, {});
    let sampled = quiet;
    await until(async () => {
      sampled = Math.max(sampled, memory(flood.pid!).rss);
      return ['succeeded', 'failed', 'cancelled'].includes(await status(run.id));
    }, 'the flood to end');
    const seconds = (Date.now() - t0) / 1000;
    const peak = Math.max(sampled, memory(flood.pid!).peak);
    const outcome = await status(run.id);
    const stored = await storedBytes(run.id);

    flood.kill('SIGTERM');
    await exited(flood);

    // 2. Runs printing without end: one cancelled, one handed back by a second SIGTERM.
    const endless = executor(base, path.join(work, 'b'), 'yes');
    started.push(endless);
    const printing = async () => {
      const r = await call<{ id: string }>('POST', `/api/workflows/${wf.id}/runs`, {});
      await until(async () => (await storedBytes(r.id)) > 8 * MiB, 'the endless run to print');
      return r.id;
    };
    const cancelled = await printing();
    const c0 = Date.now();
    await call('POST', `/api/runs/${cancelled}/cancel`);
    await until(async () => (await status(cancelled)) === 'cancelled', 'the cancel');
    const cancelSeconds = (Date.now() - c0) / 1000;
    await printing();
    const s0 = Date.now();
    endless.kill('SIGTERM');
    await until(() => endless.output.join('').includes('"event":"stopping"'), 'the first SIGTERM');
    endless.kill('SIGTERM');
    await exited(endless);
    const stopSeconds = (Date.now() - s0) / 1000;

    const ratio = peak / RSS_LIMIT_MIB;
    return [
      `flood: \`yes | head -c ${FLOOD_BYTES}\`, RUNNER_MAX_LOG_BYTES=${LOG_LIMIT}; shared, noisy machine: times are indicative`,
      `executor RSS: quiet ${quiet.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB under the flood; limit ${RSS_LIMIT_MIB} MiB: ratio ${ratio.toFixed(2)} ${ratio <= 1 ? 'ok' : 'OVER'}`,
      `the flood run ${outcome} in ${seconds.toFixed(1)} s; the runner stored ${(stored / MiB).toFixed(1)} MiB of its log`,
      `cancel of a run printing without end: ${cancelSeconds.toFixed(1)} s (heartbeat every 5 s, kill grace 5 s)`,
      `second SIGTERM of an executor holding such a run: exited in ${stopSeconds.toFixed(1)} s`,
    ].join('\n');
  } finally {
    for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await service.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
    fs.rmSync(work, { recursive: true, force: true });
  }
}
