import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { API_KEY, apiKey, bearer, makeZip, multipart, type TestRunner, SETUP_TOKEN } from './helpers.js';

/** An admin session, one project and one uploaded workflow on a fresh runner. */
export interface ProtocolFixture {
  session: string;
  projectId: string;
  workflowId: string;
  inject(o: InjectOptions): Promise<LightMyRequestResponse>;
  /** Queues a run through the public API (POST /api/workflows/{id}/runs). */
  start(body?: object): Promise<{ id: string }>;
  register(body?: object): Promise<string>;
  claim(executorId: string, wait?: number): Promise<{ statusCode: number; claim: Claimed | null }>;
  run(id: string): Promise<{ status: string; attempt: number; error: string | null; executorId: string | null }>;
  logs(runId: string, lease: Lease, chunks: { seq: number; text: string }[]): Promise<{ statusCode: number; body: { ack?: number; full?: boolean; code?: string } }>;
  complete(runId: string, lease: Lease, status: 'succeeded' | 'failed' | 'cancelled'): Promise<{ statusCode: number; body: { status?: string; code?: string } }>;
  heartbeat(executorId: string, runs?: string[]): Promise<{ cancel: string[]; drain: boolean; heartbeatMs: number; runningRuns: number }>;
}

export interface Lease {
  leaseToken: string;
  attempt: number;
}

export interface Claimed {
  run: { id: string; attempt: number };
  lease: { token: string; attempt: number };
  nextLogSeq: number;
}

export const leaseOf = (c: Claimed): Lease => ({ leaseToken: c.lease.token, attempt: c.lease.attempt });

export async function protocolFixture(r: TestRunner, setup = true): Promise<ProtocolFixture> {
  const inject = (o: InjectOptions) => r.service.app.inject(o);
  let session = '';
  if (setup) {
    const res = await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: 'a long enough password' } });
    assert.equal(res.statusCode, 201, res.body);
    session = res.json().session.token;
  } else {
    const res = await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'root@example.com', password: 'a long enough password' } });
    session = res.json().token;
  }
  const project = await inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: `p-${Math.random()}` } });
  assert.equal(project.statusCode, 201, project.body);
  const projectId = project.json().id as string;
  const m = multipart([{ name: 'file', file: makeZip() }]);
  const wf = await inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(session), ...m.headers }, payload: m.payload });
  assert.equal(wf.statusCode, 201, wf.body);
  const workflowId = wf.json().id as string;
  const key = apiKey(API_KEY);
  return {
    session,
    projectId,
    workflowId,
    inject,
    async start(body = {}) {
      // Runs are taken oldest first; one millisecond apart keeps that order well defined.
      r.clock.advance(1);
      const res = await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(session), payload: body });
      assert.equal(res.statusCode, 201, res.body);
      return res.json();
    },
    async register(body = {}) {
      const res = await inject({ method: 'POST', url: '/api/executors/register', headers: key, payload: { name: 'ex', ...body } });
      assert.equal(res.statusCode, 201, res.body);
      return res.json().id;
    },
    async claim(executorId, wait = 0) {
      const res = await inject({ method: 'POST', url: `/api/executors/${executorId}/claim?wait=${wait}`, headers: key });
      assert.ok(res.statusCode === 200 || res.statusCode === 204, res.body);
      return { statusCode: res.statusCode, claim: res.statusCode === 200 ? res.json() : null };
    },
    async run(id) {
      const res = await inject({ method: 'GET', url: `/api/runs/${id}`, headers: bearer(session) });
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    },
    async logs(runId, lease, chunks) {
      const res = await inject({ method: 'POST', url: `/api/runs/${runId}/logs`, headers: key, payload: { ...lease, chunks } });
      return { statusCode: res.statusCode, body: res.json() };
    },
    async complete(runId, lease, status) {
      const res = await inject({ method: 'POST', url: `/api/runs/${runId}/complete`, headers: key, payload: { ...lease, status, exitCode: 0 } });
      return { statusCode: res.statusCode, body: res.json() };
    },
    async heartbeat(executorId, runs) {
      const res = await inject({ method: 'POST', url: `/api/executors/${executorId}/heartbeat`, headers: key, ...(runs ? { payload: { runs } } : {}) });
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    },
  };
}

/** A real `pier runner executor` process (its JSON log lines collected in `output`). */
export function startExecutor(url: string, name: string, workDir: string, command: string, extra: string[] = []): ChildProcess & { output: string[] } {
  const child = spawn(process.execPath, ['bin/pier.js', 'runner', 'executor', '--url', url, '--name', name, '--work-dir', workDir, '--command', command, ...extra], {
    env: { ...process.env, PIER_EXECUTOR_API_KEY: API_KEY },
    stdio: ['ignore', 'pipe', 'pipe'],
  }) as ChildProcess & { output: string[] };
  child.output = [];
  child.stdout!.setEncoding('utf8').on('data', (d: string) => child.output.push(d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => child.output.push(d));
  return child;
}

export function exited(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve(child.exitCode) : new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

