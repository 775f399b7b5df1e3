import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';

export const DURATION_S = Number(process.env.BENCH_SECONDS ?? 5);
export const CONNECTIONS = 32;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * Pins a process to one CPU (Linux `taskset`), so that server and load generator stop trading
 * cores; on this 2-core machine that halves the spread between runs. No-op without taskset.
 */
export function pinToCpu(pid: number, cpu: number): void {
  // Every thread (-a): Node's thread pool and GC helpers run on the same core as its event
  // loop, so Node gets the one core a single-worker reference gets, not a share of the other.
  spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Runs the `pier` CLI once (same code path a staff member uses) and returns stdout. */
export function pierCli(env: NodeJS.ProcessEnv, ...args: string[]): string {
  const r = spawnSync(process.execPath, ['bin/pier.js', ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`pier ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** Starts `pier serve` in its own process so load generator and server do not share a core's event loop. */
export async function startPier(env: NodeJS.ProcessEnv, only: string, healthUrl: string, nodeArgs: string[] = []): Promise<ChildProcess> {
  // nodeArgs: options for node itself (e.g. --cpu-prof, which NODE_OPTIONS does not take).
  const child = spawn(process.execPath, [...nodeArgs, 'bin/pier.js', 'serve', '--only', only], {
    env: { ...process.env, PIER_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(healthUrl)).ok) return child;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`pier serve --only ${only} did not come up at ${healthUrl}`);
}

export interface LoadResult {
  rps: number;
  /** Requests completed in the run. */
  total: number;
  p99: number;
  p50: number;
  errors: number;
}

export async function load(opts: {
  url: string;
  method?: 'GET' | 'PATCH' | 'POST';
  headers?: Record<string, string>;
  bodies?: string[];
  /** Run length; BENCH_SECONDS (default 5) when not given. */
  seconds?: number;
  /** Fixed request rate for all connections together (default: as fast as the server goes). */
  rate?: number;
  /** Gives connection `i` its own path and headers (e.g. one product per client). */
  perClient?: (i: number) => { path: string; headers: Record<string, string> };
}): Promise<LoadResult> {
  const requests = (opts.bodies ?? [undefined]).map((body) => ({
    method: opts.method ?? 'GET',
    headers: opts.headers ?? {},
    ...(body !== undefined ? { body } : {}),
  }));
  let next = 0;
  const perClient = opts.perClient;
  const setupClient = perClient
    ? (client: { setRequests(r: unknown[]): void }) => {
        const own = perClient(next++ % CONNECTIONS);
        client.setRequests(requests.map((r) => ({ ...r, path: own.path, headers: { ...r.headers, ...own.headers } })));
      }
    : undefined;
  const r = await autocannon({
    url: opts.url,
    connections: CONNECTIONS,
    duration: opts.seconds ?? DURATION_S,
    ...(opts.rate ? { overallRate: opts.rate } : {}),
    requests,
    ...(setupClient ? { setupClient: setupClient as never } : {}),
  });
  return {
    rps: r.requests.average,
    total: r.requests.total,
    p99: r.latency.p99,
    p50: r.latency.p50,
    errors: r.errors + r.non2xx + r.timeouts,
  };
}

export function row(name: string, r: LoadResult, floor?: LoadResult): string {
  const ratio = floor ? `${(r.rps / floor.rps).toFixed(2)}x of floor rps, p99 ${(r.p99 / Math.max(floor.p99, 0.01)).toFixed(1)}x` : 'floor';
  return `${name.padEnd(44)} ${r.rps.toFixed(0).padStart(8)} req/s  p50 ${String(r.p50).padStart(4)} ms  p99 ${String(r.p99).padStart(4)} ms  errors ${r.errors}  ${ratio}`;
}

/** The first administrator's one-time setup token the runner benches start with (POST /api/setup requires it). */
export const SETUP_TOKEN = 'bench-setup-token-0123456789abcdef0123';

/** Waits until `url` answers 200 and the SFTP port accepts connections (it listens after the web part). */
export async function waitForPier(url: string, sftpPort: number): Promise<void> {
  const sftpUp = () =>
    new Promise<boolean>((resolve) => {
      const s = net.connect(sftpPort, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).ok && (await sftpUp())) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} or SFTP port ${sftpPort} did not come up`);
}
