import assert from 'node:assert/strict';
import http from 'node:http';
import type { InjectOptions } from 'fastify';
import { after, before, describe, test } from 'node:test';
import { API_KEY, apiKey, bearer, makeZip, multipart, startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';

const PASSWORD = 'a long enough password';

describe('projects, workflows, runs and executors over HTTP', () => {
  let r: TestRunner;
  let admin: string;
  let alice: string; // member, project owner
  let bob: string; // member, added as viewer then editor
  let bobId: string;
  let projectId: string;
  let workflowId: string;
  const inject = (o: InjectOptions) => r.service.app.inject(o);

  before(async () => {
    r = await startRunner();
    admin = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token;
    for (const email of ['alice@example.com', 'bob@example.com']) {
      const res = await inject({ method: 'POST', url: '/api/users', headers: bearer(admin), payload: { email, password: PASSWORD } });
      assert.equal(res.statusCode, 201, res.body);
      if (email.startsWith('bob')) bobId = res.json().id;
    }
    const login = async (email: string) => (await inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: PASSWORD } })).json().token;
    alice = await login('alice@example.com');
    bob = await login('bob@example.com');
  });
  after(() => r.close());

  test('project membership governs access: non-member 404, viewer reads, editor writes', async () => {
    const created = await inject({ method: 'POST', url: '/api/projects', headers: bearer(alice), payload: { name: 'Analytics' } });
    assert.equal(created.statusCode, 201);
    projectId = created.json().id;
    assert.equal((await inject({ method: 'GET', url: `/api/projects/${projectId}`, headers: bearer(bob) })).statusCode, 404);
    assert.deepEqual((await inject({ method: 'GET', url: '/api/projects', headers: bearer(bob) })).json().items, []);
    const add = await inject({ method: 'PUT', url: `/api/projects/${projectId}/members/${bobId}`, headers: bearer(alice), payload: { role: 'viewer' } });
    assert.equal(add.statusCode, 200);
    assert.equal(add.json().role, 'viewer');
    assert.equal((await inject({ method: 'GET', url: `/api/projects/${projectId}`, headers: bearer(bob) })).json().name, 'Analytics');
    const denied = await inject({ method: 'PATCH', url: `/api/projects/${projectId}`, headers: bearer(bob), payload: { name: 'Mine' } });
    assert.equal(denied.statusCode, 403);
    assert.equal(denied.json().code, 'project_role');
    await inject({ method: 'PUT', url: `/api/projects/${projectId}/members/${bobId}`, headers: bearer(alice), payload: { role: 'editor' } });
    assert.equal((await inject({ method: 'PATCH', url: `/api/projects/${projectId}`, headers: bearer(bob), payload: { description: 'd' } })).statusCode, 200);
    // Editors write but do not manage members or delete the project.
    assert.equal((await inject({ method: 'DELETE', url: `/api/projects/${projectId}`, headers: bearer(bob) })).statusCode, 403);
    const members = (await inject({ method: 'GET', url: `/api/projects/${projectId}/members`, headers: bearer(bob) })).json().items;
    assert.deepEqual(members.map((m: { email: string; role: string }) => [m.email, m.role]), [['alice@example.com', 'owner'], ['bob@example.com', 'editor']]);
  });

  test('workflow upload: zip check, versions, download', async () => {
    const url = `/api/projects/${projectId}/workflows`;
    const notZip = multipart([{ name: 'file', file: Buffer.from('hello, this is not a zip file at all, not even close!!') }]);
    const bad = await inject({ method: 'POST', url, headers: { ...bearer(bob), ...notZip.headers }, payload: notZip.payload });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'invalid_archive');
    const noFile = multipart([{ name: 'name', value: 'x' }]);
    assert.equal((await inject({ method: 'POST', url, headers: { ...bearer(bob), ...noFile.headers }, payload: noFile.payload })).statusCode, 400);
    assert.equal((await inject({ method: 'POST', url, headers: bearer(bob), payload: { name: 'x' } })).statusCode, 415);

    const v1 = makeZip('wf/workflow.knime', 'version one');
    const up = multipart([{ name: 'file', file: v1, filename: 'Sales Report.knwf' }, { name: 'description', value: 'monthly' }]);
    const res = await inject({ method: 'POST', url, headers: { ...bearer(bob), ...up.headers }, payload: up.payload });
    assert.equal(res.statusCode, 201, res.body);
    const wf = res.json();
    workflowId = wf.id;
    assert.equal(wf.name, 'Sales Report');
    assert.equal(wf.description, 'monthly');
    assert.equal(wf.versions[0].size, v1.length);

    const v2 = makeZip('wf/workflow.knime', 'version two, longer');
    const up2 = multipart([{ name: 'file', file: v2 }]);
    const ver = await inject({ method: 'POST', url: `/api/workflows/${workflowId}/versions`, headers: { ...bearer(alice), ...up2.headers }, payload: up2.payload });
    assert.equal(ver.statusCode, 201);
    assert.equal(ver.json().version, 2);
    const dl1 = await inject({ method: 'GET', url: `/api/workflows/${workflowId}/versions/1/download`, headers: bearer(bob) });
    assert.equal(dl1.statusCode, 200);
    assert.equal(dl1.headers['content-type'], 'application/zip');
    assert.ok(dl1.rawPayload.equals(v1));
    const dl2 = await inject({ method: 'GET', url: `/api/workflows/${workflowId}/versions/2/download`, headers: apiKey(API_KEY) });
    assert.ok(dl2.rawPayload.equals(v2));
    assert.equal((await inject({ method: 'GET', url: `/api/workflows/${workflowId}/versions/3/download`, headers: bearer(bob) })).statusCode, 404);
    const got = (await inject({ method: 'GET', url: `/api/workflows/${workflowId}`, headers: bearer(bob) })).json();
    assert.equal(got.latestVersion, 2);
    assert.deepEqual(got.versions.map((v: { version: number }) => v.version), [2, 1]);
  });

  test('runs: start, executor claim, logs, cancel fences the lease, complete, pagination', async () => {
    const start = await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(bob), payload: { version: 1, parameters: { rows: 5, mode: 'fast' } } });
    assert.equal(start.statusCode, 201, start.body);
    const run = start.json();
    assert.equal(run.status, 'queued');
    assert.equal(run.workflowVersion, 1);
    assert.deepEqual(run.parameters, { rows: 5, mode: 'fast' });
    assert.equal((await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(bob), payload: { version: 9 } })).statusCode, 400);

    const ex = (await inject({ method: 'POST', url: '/api/executors/register', headers: apiKey(API_KEY), payload: { name: 'ex-1', capacity: 2, labels: ['linux'] } })).json();
    const claim = await inject({ method: 'POST', url: `/api/executors/${ex.id}/claim?wait=0`, headers: apiKey(API_KEY) });
    assert.equal(claim.statusCode, 200, claim.body);
    const c = claim.json();
    assert.equal(c.run.id, run.id);
    assert.equal(c.lease.attempt, 1);
    assert.equal(c.nextLogSeq, 1);
    const logs = (body: object) => inject({ method: 'POST', url: `/api/runs/${run.id}/logs`, headers: apiKey(API_KEY), payload: body });
    const lease = { leaseToken: c.lease.token, attempt: 1 };
    assert.equal((await logs({ ...lease, chunks: [{ seq: 1, text: 'one' }, { seq: 3, text: 'three' }] })).json().ack, 1);
    assert.equal((await logs({ ...lease, chunks: [{ seq: 2, text: 'two' }, { seq: 1, text: 'dup' }] })).json().ack, 3);
    assert.equal((await logs({ leaseToken: 'rnr_lease_forged', attempt: 1, chunks: [{ seq: 4, text: 'x' }] })).statusCode, 409);
    const page1 = (await inject({ method: 'GET', url: `/api/runs/${run.id}/logs?limit=2`, headers: bearer(bob) })).json();
    assert.deepEqual(page1.items.map((l: { text: string }) => l.text), ['one', 'two']);
    const page2 = (await inject({ method: 'GET', url: `/api/runs/${run.id}/logs?after=${page1.nextAfter}`, headers: bearer(bob) })).json();
    assert.deepEqual(page2.items.map((l: { text: string }) => l.text), ['three']);
    assert.equal(page2.finished, false);

    const cancel = await inject({ method: 'POST', url: `/api/runs/${run.id}/cancel`, headers: bearer(bob) });
    assert.equal(cancel.json().status, 'cancelling');
    // The cancel committed first: a success reported now is refused, and the run ends cancelled.
    const confirmed = await inject({ method: 'POST', url: `/api/runs/${run.id}/complete`, headers: apiKey(API_KEY), payload: { ...lease, status: 'succeeded' } });
    assert.equal(confirmed.statusCode, 409);
    assert.equal(confirmed.json().code, 'run_cancelled');
    assert.equal((await inject({ method: 'GET', url: `/api/runs/${run.id}`, headers: bearer(bob) })).json().status, 'cancelled');
    assert.equal((await logs({ ...lease, chunks: [{ seq: 4, text: 'late' }] })).statusCode, 409);
    const late = await inject({ method: 'POST', url: `/api/runs/${run.id}/complete`, headers: apiKey(API_KEY), payload: { ...lease, status: 'succeeded' } });
    assert.equal(late.statusCode, 409);
    assert.equal(late.json().code, 'stale_lease');
    assert.equal((await inject({ method: 'POST', url: `/api/runs/${run.id}/cancel`, headers: bearer(bob) })).statusCode, 409);

    // A second run completes with outputs.
    const run2 = (await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(alice), payload: {} })).json();
    const c2 = (await inject({ method: 'POST', url: `/api/executors/${ex.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json();
    assert.equal(c2.run.id, run2.id);
    assert.equal(c2.run.workflowVersion, 2);
    const done = await inject({
      method: 'POST', url: `/api/runs/${run2.id}/complete`, headers: apiKey(API_KEY),
      payload: { leaseToken: c2.lease.token, attempt: 1, status: 'failed', exitCode: 3, error: 'node failed' },
    });
    assert.equal(done.statusCode, 200);
    assert.equal(done.json().status, 'failed');
    assert.equal(done.json().exitCode, 3);
    assert.equal((await inject({ method: 'POST', url: `/api/executors/${ex.id}/claim?wait=0`, headers: apiKey(API_KEY) })).statusCode, 204);

    for (let i = 0; i < 3; i++) await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(bob), payload: {} });
    const seen: string[] = [];
    let cursor = '';
    for (let guard = 0; guard < 10; guard++) {
      const res = await inject({ method: 'GET', url: `/api/runs?workflow=${workflowId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`, headers: bearer(bob) });
      assert.equal(res.statusCode, 200, res.body);
      seen.push(...res.json().items.map((x: { id: string }) => x.id));
      if (!res.json().nextCursor) break;
      cursor = res.json().nextCursor;
    }
    assert.equal(seen.length, 5);
    assert.equal(new Set(seen).size, 5);
    const failed = (await inject({ method: 'GET', url: '/api/runs?status=failed', headers: bearer(bob) })).json().items;
    assert.deepEqual(failed.map((x: { id: string }) => x.id), [run2.id]);
    assert.equal((await inject({ method: 'GET', url: '/api/runs?cursor=garbage', headers: bearer(bob) })).statusCode, 400);
    assert.equal((await inject({ method: 'GET', url: '/api/runs?limit=0', headers: bearer(bob) })).statusCode, 400);
  });

  test('executors: drain stops claims, delete requeues', async () => {
    const ex = (await inject({ method: 'POST', url: '/api/executors/register', headers: bearer(admin), payload: { name: 'ex-2' } })).json();
    const claimed = (await inject({ method: 'POST', url: `/api/executors/${ex.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json();
    assert.equal(claimed.run.status, 'running');
    const drained = await inject({ method: 'POST', url: `/api/executors/${ex.id}/drain`, headers: apiKey(API_KEY) });
    assert.equal(drained.json().status, 'draining');
    assert.equal(drained.json().runningRuns, 1);
    assert.equal((await inject({ method: 'POST', url: `/api/executors/${ex.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json().code, 'executor_draining');
    assert.equal((await inject({ method: 'DELETE', url: `/api/executors/${ex.id}`, headers: apiKey(API_KEY) })).statusCode, 204);
    const back = (await inject({ method: 'GET', url: `/api/runs/${claimed.run.id}`, headers: bearer(bob) })).json();
    assert.equal(back.status, 'queued');
    assert.equal((await inject({ method: 'GET', url: `/api/executors/${ex.id}`, headers: apiKey(API_KEY) })).statusCode, 404);
  });

  test('live logs arrive as Server-Sent Events and the stream ends with the run', async () => {
    const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    const run = (await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(bob), payload: {} })).json();
    const ex = (await inject({ method: 'POST', url: '/api/executors/register', headers: apiKey(API_KEY), payload: { name: 'sse', capacity: 10 } })).json();
    // Claim until we hold this run (older queued runs are taken first).
    let c: { run: { id: string }; lease: { token: string; attempt: number } } | null = null;
    for (let i = 0; i < 10 && c?.run.id !== run.id; i++) {
      c = (await inject({ method: 'POST', url: `/api/executors/${ex.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json();
    }
    assert.equal(c?.run.id, run.id);
    const events: string[] = [];
    const ended = new Promise<void>((resolve, reject) => {
      const req = http.get(`${base}/api/runs/${run.id}/logs/stream`, { headers: bearer(bob) }, (res) => {
        assert.equal(res.statusCode, 200);
        assert.match(String(res.headers['content-type']), /^text\/event-stream/);
        res.setEncoding('utf8');
        let buf = '';
        res.on('data', (d: string) => {
          buf += d;
          const parts = buf.split('\n\n');
          buf = parts.pop() ?? '';
          events.push(...parts.filter((p) => !p.startsWith(':')));
        });
        res.on('end', () => resolve());
      });
      req.on('error', reject);
    });
    const post = (seq: number, text: string) =>
      inject({ method: 'POST', url: `/api/runs/${run.id}/logs`, headers: apiKey(API_KEY), payload: { leaseToken: c!.lease.token, attempt: c!.lease.attempt, chunks: [{ seq, text }] } });
    await post(1, 'first');
    await new Promise((res) => setTimeout(res, 700));
    await post(2, 'second');
    await inject({ method: 'POST', url: `/api/runs/${run.id}/complete`, headers: apiKey(API_KEY), payload: { leaseToken: c!.lease.token, attempt: c!.lease.attempt, status: 'succeeded' } });
    await ended;
    assert.equal(events.length, 3, events.join('|'));
    assert.match(events[0]!, /^id: 1\.1\nevent: log\ndata: .*"text":"first"/);
    assert.match(events[1]!, /^id: 1\.2\nevent: log\ndata: .*"text":"second"/);
    assert.equal(events[2], 'event: end\ndata: {"status":"succeeded"}');
  });

  test('deleting a workflow and a project removes them', async () => {
    assert.equal((await inject({ method: 'DELETE', url: `/api/workflows/${workflowId}`, headers: bearer(bob) })).statusCode, 204);
    assert.equal((await inject({ method: 'GET', url: `/api/workflows/${workflowId}`, headers: bearer(bob) })).statusCode, 404);
    assert.equal((await inject({ method: 'DELETE', url: `/api/projects/${projectId}`, headers: bearer(alice) })).statusCode, 204);
    assert.equal((await inject({ method: 'GET', url: `/api/projects/${projectId}`, headers: bearer(alice) })).statusCode, 404);
  });
});
