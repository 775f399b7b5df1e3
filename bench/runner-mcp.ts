// MCP against REST on the runner: "get a run" as an MCP tool call (POST RUNNER_URL/mcp, JSON-RPC
// tools/call get_run, stateless Streamable HTTP answered as JSON) against the same run through
// GET /api/runs/{id}, with the same personal access token, on the same runner process, in the
// same bench run. Target: MCP tool calls/s >= 0.5 x REST requests/s.
//
// The runner is `pier serve --only runner` in a child process on loopback, set up through its
// API (first admin with RUNNER_SETUP_TOKEN, a project, a workflow upload, a run, a read token),
// on SQLite and, when there is one (bench/postgres.ts), on PostgreSQL. Before measuring, each
// side's answer is checked (MCP: structuredContent.run.id is the run, not an error; REST: 200
// with the run); under load every response must be 2xx and byte-identical to that checked answer.
//
// The machine is shared and noisy: the two sides run back to back, alternating which goes
// first, for several rounds; the median of the paired ratios is held to the target. Server and
// load generator are pinned to different CPUs. The server's CPU time per request (/proc) shows
// where a gap comes from. BENCH_CPU_PROF=<dir> writes a V8 CPU profile of the runner there.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { createPostgresDatabase } from '../test/helpers/db.js';
import { makeZip } from '../test/runner/helpers.js';
import { CONNECTIONS, freePort, pinToCpu, startPier, tempDir, SETUP_TOKEN } from './lib.js';
import { benchPostgres } from './postgres.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const TARGET = 0.5;
const PASSWORD = 'bench password 123';
const MCP_PROTOCOL_VERSION = '2025-11-25';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** User + system CPU seconds the process has used (Linux /proc); NaN elsewhere. */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

interface Side {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** The checked answer: every response under load must equal it. */
  expected: string;
}

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  cpuUs: number;
  non2xx: number;
  /** Connection errors, timeouts and 2xx answers that differ from the checked one. */
  errors: number;
}

async function json(res: Response): Promise<{ status: number; text: string; body: unknown }> {
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // reported with the text below
  }
  return { status: res.status, text, body };
}

/** First admin, project, workflow, run and a read-scope personal access token, all through the API. */
async function setUp(base: string): Promise<{ runId: string; pat: string }> {
  const post = async (p: string, body: unknown, jwt?: string) => {
    const r = await json(
      await fetch(`${base}${p}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(jwt ? { authorization: `Bearer ${jwt}` } : {}) },
        body: JSON.stringify(body),
      }),
    );
    if (r.status !== 200 && r.status !== 201) throw new Error(`POST ${p}: ${r.status} ${r.text.slice(0, 500)}`);
    return r.body as Record<string, unknown>;
  };
  const setup = await post('/api/setup', { setupToken: SETUP_TOKEN, email: 'bench@example.com', password: PASSWORD });
  const jwt = (setup.session as { token: string }).token;
  const project = await post('/api/projects', { name: 'bench' }, jwt);
  const form = new FormData();
  form.set('file', new Blob([new Uint8Array(makeZip())]), 'w.knwf');
  const wf = await json(await fetch(`${base}/api/projects/${project.id as string}/workflows`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` }, body: form }));
  if (wf.status !== 201) throw new Error(`workflow upload: ${wf.status} ${wf.text.slice(0, 500)}`);
  const run = await post(`/api/workflows/${(wf.body as { id: string }).id}/runs`, {}, jwt);
  const token = await post('/api/tokens', { name: 'bench', scope: 'read' }, jwt);
  return { runId: run.id as string, pat: token.token as string };
}

/** Both sides, each checked once by hand and its answer kept as the one every response must give. */
async function sides(base: string, runId: string, pat: string): Promise<[Side, Side]> {
  const restHeaders = { authorization: `Bearer ${pat}` };
  const rest = await json(await fetch(`${base}/api/runs/${runId}`, { headers: restHeaders }));
  if (rest.status !== 200 || (rest.body as { id?: unknown } | null)?.id !== runId) throw new Error(`REST GET /api/runs/${runId}: ${rest.status} ${rest.text.slice(0, 500)}`);

  const mcpHeaders = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MCP_PROTOCOL_VERSION,
    authorization: `Bearer ${pat}`,
  };
  const mcpBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_run', arguments: { runId } } });
  const mcp = await json(await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders, body: mcpBody }));
  const result = (mcp.body as { result?: { isError?: boolean; structuredContent?: { run?: { id?: unknown } } } } | null)?.result;
  if (mcp.status !== 200 || !result || result.isError || result.structuredContent?.run?.id !== runId) {
    throw new Error(`MCP tools/call get_run: ${mcp.status} ${mcp.text.slice(0, 500)}`);
  }
  // The answers must not vary between requests, or comparing each response with them says nothing.
  const again = [
    await (await fetch(`${base}/api/runs/${runId}`, { headers: restHeaders })).text(),
    await (await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders, body: mcpBody })).text(),
  ];
  if (again[0] !== rest.text || again[1] !== mcp.text) throw new Error('the answers differ between two identical requests');
  return [
    { name: 'REST  GET /api/runs/{id}', method: 'GET', path: `/api/runs/${runId}`, headers: restHeaders, expected: rest.text },
    { name: 'MCP   tools/call get_run', method: 'POST', path: '/mcp', headers: mcpHeaders, body: mcpBody, expected: mcp.text },
  ];
}

async function measure(base: string, pid: number, side: Side): Promise<Measured> {
  const before = cpuSeconds(pid);
  const r = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: [{ method: side.method, path: side.path, headers: side.headers, ...(side.body !== undefined ? { body: side.body } : {}) }],
    verifyBody: (body: string) => body === side.expected,
  });
  const cpu = cpuSeconds(pid) - before;
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    cpuUs: (cpu / Math.max(1, r.requests.total)) * 1e6,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts + r.mismatches,
  };
}

async function one(label: string, databaseUrl: string | null): Promise<{ lines: string[]; pass: boolean }> {
  const dataDir = tempDir('pier-bench-mcp-');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const prof = process.env.BENCH_CPU_PROF;
  let child: ChildProcess | undefined;
  try {
    child = await startPier(
      {
        PIER_HOST: '127.0.0.1',
        PIER_DATA_DIR: dataDir,
        PIER_LOG_LEVEL: 'silent',
        RUNNER_PORT: String(port),
        RUNNER_URL: base,
        RUNNER_SETUP_TOKEN: SETUP_TOKEN,
        RUNNER_STORAGE_DIR: path.join(dataDir, 'storage'),
        // Explicit, so that a RUNNER_DATABASE_URL in the environment does not turn the SQLite row into something else.
        RUNNER_DATABASE_URL: databaseUrl ?? path.join(dataDir, 'runner.sqlite'),
      },
      'runner',
      `${base}/healthz`,
      prof ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(prof, label)}`] : [],
    );
    const pid = child.pid!;
    pinToCpu(pid, 1);
    pinToCpu(process.pid, 0);
    const { runId, pat } = await setUp(base);
    const [rest, mcp] = await sides(base, runId, pat);
    // Warm-up (JIT, statement caches, connection pools), then paired rounds.
    await measure(base, pid, rest);
    await measure(base, pid, mcp);
    const pairs: { rest: Measured; mcp: Measured }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which side runs first: the second run of a pair tends to be slower here.
      if (round % 2) {
        const m = await measure(base, pid, mcp);
        pairs.push({ mcp: m, rest: await measure(base, pid, rest) });
      } else {
        const r = await measure(base, pid, rest);
        pairs.push({ rest: r, mcp: await measure(base, pid, mcp) });
      }
    }
    const row = (side: Side, ms: Measured[]) => {
      const non2xx = ms.reduce((n, m) => n + m.non2xx, 0);
      const errors = ms.reduce((n, m) => n + m.errors, 0);
      return `  ${side.name.padEnd(28)} ${median(ms.map((m) => m.rps)).toFixed(0).padStart(7)} req/s  p50 ${String(median(ms.map((m) => m.p50))).padStart(3)} ms  p99 ${String(median(ms.map((m) => m.p99))).padStart(3)} ms  server CPU ${median(ms.map((m) => m.cpuUs)).toFixed(0).padStart(4)} µs/req  non-2xx ${non2xx}  errors ${errors}`;
    };
    const restRuns = pairs.map((p) => p.rest);
    const mcpRuns = pairs.map((p) => p.mcp);
    const ratio = median(pairs.map((p) => p.mcp.rps / p.rest.rps));
    const cpuRatio = median(pairs.map((p) => p.mcp.cpuUs / p.rest.cpuUs));
    const clean = pairs.every((p) => p.rest.non2xx + p.rest.errors + p.mcp.non2xx + p.mcp.errors === 0);
    const pass = clean && ratio >= TARGET;
    return {
      pass,
      lines: [
        `${label}:`,
        row(rest, restRuns),
        row(mcp, mcpRuns),
        `  ratio MCP/REST ${ratio.toFixed(2)} (target >= ${TARGET}; range ${Math.min(...pairs.map((p) => p.mcp.rps / p.rest.rps)).toFixed(2)}-${Math.max(...pairs.map((p) => p.mcp.rps / p.rest.rps)).toFixed(2)}), server CPU per request ${cpuRatio.toFixed(2)}x REST${clean ? '' : ', non-2xx or errors seen'} ${pass ? 'PASS' : 'FAIL'}`,
      ],
    };
  } finally {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

export async function benchRunnerMcp(): Promise<string> {
  const lines = [
    `runner: "get a run" as an MCP tool call vs REST, same token, run and process; median of ${ROUNDS} alternating pairs of ${SECONDS} s runs, ${CONNECTIONS} connections, loopback`,
  ];
  let pass = true;
  const sqlite = await one('sqlite', null);
  lines.push(...sqlite.lines);
  pass &&= sqlite.pass;
  const server = await benchPostgres();
  try {
    if (server) {
      const pg = await createPostgresDatabase(server.url, 'pier_bench_');
      try {
        const r = await one('postgres', pg.url);
        lines.push(...r.lines);
        pass &&= r.pass;
      } finally {
        await pg.drop();
      }
    } else lines.push('postgres: not available (set BENCH_DATABASE_URL or install postgresql)');
  } finally {
    server?.stop();
  }
  lines.push(`MCP/REST >= ${TARGET} on every database: ${pass ? 'PASS' : 'FAIL'}`);
  return lines.join('\n');
}
