/**
 * Runs for the UI tests, made through the public API: a project, a workflow upload, and an
 * executor (the admin API key) that claims runs, writes their logs and outputs and ends them.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { API_KEY, makeZip } from '../helpers.js';
import type { UiRunner } from './harness.js';

export interface Lease {
  leaseToken: string;
  attempt: number;
}

export class Seeder {
  projectId = '';
  workflowId = '';
  executorId = '';
  constructor(readonly ui: UiRunner) {}

  async init(name = 'Sales report'): Promise<this> {
    const { ui } = this;
    const project = await ui.api('POST', '/api/projects', { name: 'Analytics' }, ui.adminToken);
    assert.equal(project.status, 201, JSON.stringify(project.json));
    this.projectId = project.json.id;
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(makeZip())]), `${name}.knwf`);
    const res = await fetch(`${ui.base}/api/projects/${this.projectId}/workflows`, { method: 'POST', headers: { authorization: `Bearer ${ui.adminToken}` }, body: form });
    assert.equal(res.status, 201, await res.clone().text());
    this.workflowId = ((await res.json()) as { id: string }).id;
    const ex = await ui.api('POST', '/api/executors/register', { name: 'ex-1', capacity: 256 }, API_KEY);
    assert.equal(ex.status, 201, JSON.stringify(ex.json));
    this.executorId = ex.json.id;
    return this;
  }

  async start(parameters: Record<string, unknown> = {}): Promise<{ id: string }> {
    const res = await this.ui.api('POST', `/api/workflows/${this.workflowId}/runs`, { parameters }, this.ui.adminToken);
    assert.equal(res.status, 201, JSON.stringify(res.json));
    return res.json;
  }

  /** Starts a run and claims it at once (the oldest queued run is this one). */
  async startRunning(parameters: Record<string, unknown> = {}): Promise<{ id: string; lease: Lease }> {
    const run = await this.start(parameters);
    const claim = await this.ui.api('POST', `/api/executors/${this.executorId}/claim?wait=0`, undefined, API_KEY);
    assert.equal(claim.status, 200, JSON.stringify(claim.json));
    assert.equal(claim.json.run.id, run.id);
    return { id: run.id, lease: { leaseToken: claim.json.lease.token, attempt: claim.json.lease.attempt } };
  }

  async log(runId: string, lease: Lease, texts: string[], firstSeq: number): Promise<void> {
    const chunks = texts.map((text, i) => ({ seq: firstSeq + i, text }));
    const res = await this.ui.api('POST', `/api/runs/${runId}/logs`, { ...lease, chunks }, API_KEY);
    assert.equal(res.status, 200, JSON.stringify(res.json));
  }

  async output(runId: string, lease: Lease, name: string, content: string): Promise<void> {
    const data = Buffer.from(content);
    const form = new FormData();
    form.append('leaseToken', lease.leaseToken);
    form.append('attempt', String(lease.attempt));
    form.append('sha256', crypto.createHash('sha256').update(data).digest('hex'));
    form.append('file', new Blob([new Uint8Array(data)]), 'file');
    const res = await fetch(`${this.ui.base}/api/runs/${runId}/outputs/${encodeURIComponent(name)}`, { method: 'PUT', headers: { authorization: `ApiKey ${API_KEY}` }, body: form });
    assert.equal(res.status, 200, await res.text());
  }

  async finish(runId: string, lease: Lease, status: 'succeeded' | 'failed', error: string | null = null, exitCode: number | null = status === 'failed' ? 1 : 0): Promise<void> {
    const res = await this.ui.api('POST', `/api/runs/${runId}/complete`, { ...lease, status, exitCode, error }, API_KEY);
    assert.equal(res.status, 200, JSON.stringify(res.json));
  }

  /** A finished run in one go. */
  async done(status: 'succeeded' | 'failed', parameters: Record<string, unknown> = {}, error: string | null = null): Promise<string> {
    const r = await this.startRunning(parameters);
    await this.finish(r.id, r.lease, status, error);
    return r.id;
  }

  async runs(query = ''): Promise<SeenRun[]> {
    const items: SeenRun[] = [];
    let cursor: string | null = null;
    do {
      const res: { json: { items: never[]; nextCursor: string | null } } = await this.ui.api('GET', `/api/runs?limit=100${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, undefined, this.ui.adminToken);
      items.push(...res.json.items);
      cursor = res.json.nextCursor;
    } while (cursor);
    return items;
  }
}

export interface SeenRun {
  id: string;
  status: string;
  parameters: Record<string, unknown>;
  workflowVersion: number;
}

export const XSS_IMG = '<img src=x onerror=window.__xss=1>';
export const XSS_SCRIPT = '<script>window.__xss=1</script>';
