import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { apiKey, bearer, makeZip, multipart, startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';

const PASSWORD = 'a long enough password';

/** Opens the live log stream; resolves with every event once the server closes it. */
function follow(base: string, runId: string, headers: Record<string, string>, opened: () => void): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const events: string[] = [];
    const req = http.get(`${base}/api/runs/${runId}/logs/stream`, { headers }, (res) => {
      assert.equal(res.statusCode, 200);
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (d: string) => {
        buf += d;
        const parts = buf.split('\n\n');
        buf = parts.pop() ?? '';
        events.push(...parts.filter((p) => !p.startsWith(':')));
      });
      res.on('end', () => resolve(events));
      opened();
    });
    req.on('error', reject);
  });
}

for (const target of dialects()) {
  describe(`the live log stream ends once the caller loses access (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let base: string;
    let admin: string;
    let projectId: string;
    let workflowId: string;
    const inject: TestRunner['service']['app']['inject'] = ((o: never) => r.service.app.inject(o)) as never;

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url });
      base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      admin = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session.token;
      projectId = (await inject({ method: 'POST', url: '/api/projects', headers: bearer(admin), payload: { name: 'p' } })).json().id;
      const m = multipart([{ name: 'file', file: makeZip() }]);
      workflowId = (await inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(admin), ...m.headers }, payload: m.payload })).json().id;
    });
    after(async () => {
      await r.close();
      await dbh.drop();
    });

    /** A viewer of the project with a read token, and a queued run (its stream stays open). */
    async function viewer(n: string) {
      const email = `${n}@example.com`;
      const user = (await inject({ method: 'POST', url: '/api/users', headers: bearer(admin), payload: { email, password: PASSWORD } })).json();
      await inject({ method: 'PUT', url: `/api/projects/${projectId}/members/${user.id}`, headers: bearer(admin), payload: { role: 'viewer' } });
      const session = (await inject({ method: 'POST', url: '/api/auth/login', payload: { email, password: PASSWORD } })).json().token;
      const token = (await inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 't', scope: 'read' } })).json();
      const run = (await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(admin), payload: {} })).json();
      return { userId: user.id as string, session, token: token as { id: string; token: string }, runId: run.id as string };
    }

    async function streamEndsAfter(runId: string, headers: Record<string, string>, change: () => Promise<unknown>): Promise<string> {
      let opened!: () => void;
      const isOpen = new Promise<void>((res) => {
        opened = res;
      });
      const events = follow(base, runId, headers, opened);
      await isOpen;
      await change();
      const all = await events;
      const last = all[all.length - 1] ?? '';
      assert.match(last, /^event: error\ndata: /, all.join('|'));
      return last;
    }

    test('a revoked token', { timeout: 30_000 }, async () => {
      const v = await viewer('revoked');
      const last = await streamEndsAfter(v.runId, apiKey(v.token.token), () =>
        inject({ method: 'DELETE', url: `/api/tokens/${v.token.id}`, headers: bearer(v.session) }),
      );
      assert.match(last, /"status":401/);
    });

    test('a removed membership', { timeout: 30_000 }, async () => {
      const v = await viewer('removed');
      const last = await streamEndsAfter(v.runId, bearer(v.session), () =>
        inject({ method: 'DELETE', url: `/api/projects/${projectId}/members/${v.userId}`, headers: bearer(admin) }),
      );
      assert.match(last, /"status":404/);
    });

    test('a deleted user', { timeout: 30_000 }, async () => {
      const v = await viewer('deleted');
      const last = await streamEndsAfter(v.runId, bearer(v.session), () => inject({ method: 'DELETE', url: `/api/users/${v.userId}`, headers: bearer(admin) }));
      assert.match(last, /"status":401/);
    });
  });
}
