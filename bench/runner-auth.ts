// Auth overhead of the runner API: GET /api/me by personal access token and by JWT, and the
// admin key on GET /api/executors/{id} (the admin key may not read /api/me: it is no user),
// each against an unauthenticated route answering a body of exactly the same size from the
// same server. Target: auth overhead = 1 - authed rps / unauthenticated rps <= 20%.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import { type LoadResult, load, tempDir } from './lib.js';

const API_KEY = 'bench-admin-key-0123456789abcdef';
const PASSWORD = 'bench password 123';

async function startServer(dataDir: string): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/runner-auth-server.ts'], {
    env: { ...process.env, PIER_DATA_DIR: dataDir, PIER_LOG_LEVEL: 'silent', API_KEY, RUNNER_URL: 'http://127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl).trim());
    });
    child.once('exit', (code) => reject(new Error(`runner bench server exited with ${code}`)));
  });
  return { child, base };
}

async function call(base: string, path: string, init: RequestInit = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
  });
  return { status: res.status, text: await res.text() };
}

function fmt(name: string, r: LoadResult, ref: LoadResult): string {
  const overhead = 1 - r.rps / ref.rps;
  return (
    `${name.padEnd(40)} ${r.rps.toFixed(0).padStart(7)} req/s  p99 ${String(r.p99).padStart(3)} ms  errors ${r.errors}` +
    `  | unauth same size ${ref.rps.toFixed(0).padStart(7)} req/s  p99 ${String(ref.p99).padStart(3)} ms` +
    `  | overhead ${(overhead * 100).toFixed(1).padStart(5)}% ${overhead <= 0.2 ? '(ok <= 20%)' : '(ABOVE 20% target)'}`
  );
}

export async function benchRunnerAuth(): Promise<string> {
  const dataDir = tempDir('pier-bench-runner-');
  const { child, base } = await startServer(dataDir);
  try {
    const setup = await call(base, '/api/setup', { method: 'POST', body: JSON.stringify({ email: 'bench@example.com', password: PASSWORD }) });
    if (setup.status !== 201) throw new Error(`setup failed: ${setup.status} ${setup.text}`);
    const jwt = JSON.parse(setup.text).session.token as string;
    const tok = await call(base, '/api/tokens', { method: 'POST', headers: { authorization: `Bearer ${jwt}` }, body: JSON.stringify({ name: 'bench', scope: 'read' }) });
    const pat = JSON.parse(tok.text).token as string;
    const ex = await call(base, '/api/executors/register', { method: 'POST', headers: { authorization: `ApiKey ${API_KEY}` }, body: JSON.stringify({ name: 'bench-executor-0' }) });
    const executorId = JSON.parse(ex.text).id as string;

    const cases = [
      { name: 'GET /api/me, personal access token', path: '/api/me', auth: `ApiKey ${pat}` },
      { name: 'GET /api/me, JWT', path: '/api/me', auth: `Bearer ${jwt}` },
      { name: 'GET /api/executors/{id}, admin key', path: `/api/executors/${executorId}`, auth: `ApiKey ${API_KEY}` },
    ];
    const lines = [
      `runner auth overhead (${base}, SQLite, ${process.env.BENCH_SECONDS ?? 5} s per case, 32 connections; reference = unauthenticated GET of a body of the same size on the same server)`,
    ];
    let worst = 0;
    for (const c of cases) {
      const probe = await call(base, c.path, { headers: { authorization: c.auth } });
      if (probe.status !== 200) throw new Error(`${c.name}: ${probe.status} ${probe.text}`);
      const bytes = Buffer.byteLength(probe.text);
      const refPath = `/bench/reference/${bytes}`;
      const refProbe = await call(base, refPath);
      if (Buffer.byteLength(refProbe.text) !== bytes) throw new Error('reference body size differs');
      // Warm-up, then reference and authed back to back.
      await load({ url: `${base}${c.path}`, headers: { authorization: c.auth } }).catch(() => undefined);
      const ref = await load({ url: `${base}${refPath}` });
      const authed = await load({ url: `${base}${c.path}`, headers: { authorization: c.auth } });
      worst = Math.max(worst, 1 - authed.rps / ref.rps);
      lines.push(fmt(`${c.name} (${bytes} B)`, authed, ref));
    }
    lines.push(`worst auth overhead: ${(worst * 100).toFixed(1)}% (target <= 20%)`);
    return lines.join('\n');
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}
