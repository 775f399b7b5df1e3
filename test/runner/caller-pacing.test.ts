/**
 * Each caller of the runner is served at its own pace (RUNNER_CALLER_RATE, _BURST, _QUEUE): one
 * user's burst past its bucket waits, past its queue gets 429 problem+json with Retry-After, and
 * meanwhile another user is answered; the admin key (executors) is not paced; requests without
 * credentials are paced per address. The pacing clock is held still during a burst, so which
 * requests start, wait or are refused does not depend on how fast the machine is; the waits
 * themselves are real timers (half a second a token at 2 a second).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { API_KEY, apiKey, bearer, makeZip, multipart, SETUP_TOKEN, startRunner, type TestRunner } from './helpers.js';

const PASSWORD = 'a long enough password';
const PACE = { RUNNER_CALLER_RATE: '2', RUNNER_CALLER_BURST: '2', RUNNER_CALLER_QUEUE: '3' };

interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  json(): { [k: string]: unknown };
}

/** Requests started together; `settled()` counts those answered so far. */
function together(n: number, send: () => Promise<Answer>): { all: Promise<Answer[]>; settled(): number } {
  let settled = 0;
  const all = Promise.all(
    Array.from({ length: n }, () =>
      send().then((a) => {
        settled++;
        return a;
      }),
    ),
  );
  return { all, settled: () => settled };
}

for (const target of dialects()) {
  describe(`each caller is paced on its own (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    /** The pacing clock (ms): moved on by a minute between steps of the set-up, held during a burst. */
    let paceMs = 0;
    const tokens: Record<string, string> = {};
    const inject = (o: object) => r.service.app.inject(o as never) as unknown as Promise<Answer>;

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, env: PACE, paceClock: () => paceMs });
      const admin = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json() as {
        session: { token: string };
      };
      for (const name of ['flood', 'calm']) {
        paceMs += 60_000;
        const created = await inject({ method: 'POST', url: '/api/users', headers: bearer(admin.session.token), payload: { email: `${name}@example.com`, password: PASSWORD } });
        assert.equal(created.statusCode, 201, JSON.stringify(created.json()));
        paceMs += 60_000;
        tokens[name] = (await inject({ method: 'POST', url: '/api/auth/login', payload: { email: `${name}@example.com`, password: PASSWORD } })).json().token as string;
      }
      paceMs += 60_000; // every bucket full again
    });
    after(async () => {
      await r?.close();
      await dbh?.drop();
    });

    test("one user's burst waits, then is refused past its queue, while another user is answered", async () => {
      const me = () => inject({ method: 'GET', url: '/api/me', headers: bearer(tokens.flood!) });
      const burst = together(10, me);
      // Two start at once (the burst), three wait for a token each, five find the queue full.
      const calm = await inject({ method: 'GET', url: '/api/me', headers: bearer(tokens.calm!) });
      assert.equal(calm.statusCode, 200);
      assert.equal(calm.json().email, 'calm@example.com');
      assert.ok(burst.settled() < 10, `the other user was answered while the burst still waited (${burst.settled()} of 10 answered)`);
      const answers = await burst.all;
      const refused = answers.filter((a) => a.statusCode === 429);
      const served = answers.filter((a) => a.statusCode === 200);
      assert.equal(served.length, 5, `served: ${answers.map((a) => a.statusCode)}`);
      assert.equal(refused.length, 5);
      for (const a of served) assert.equal(a.json().email, 'flood@example.com');
      for (const a of refused) {
        assert.match(String(a.headers['content-type']), /^application\/problem\+json/);
        // The next token after the three waiting ones: 4 tokens at 2 a second = 2 s ahead.
        assert.equal(a.headers['retry-after'], '2');
        const problem = a.json();
        assert.equal(problem.status, 429);
        assert.equal(problem.code, 'too_many_requests');
        assert.match(String(problem.detail), /3 of your requests are already waiting/);
      }
    });

    test('the admin key is not paced: executors and operators are served however many ask at once', async () => {
      paceMs += 60_000;
      const answers = await together(20, () => inject({ method: 'GET', url: '/api/executors', headers: apiKey(API_KEY) })).all;
      assert.deepEqual(
        answers.map((a) => a.statusCode),
        Array(20).fill(200),
      );
    });

    test('requests without credentials are paced per address', async () => {
      paceMs += 60_000;
      const from = (remoteAddress: string) => () => inject({ method: 'GET', url: '/.well-known/oauth-authorization-server', remoteAddress });
      const one = together(8, from('192.0.2.1'));
      const other = await from('192.0.2.2')();
      assert.equal(other.statusCode, 200, 'another address has a bucket of its own');
      assert.equal(other.json().issuer, 'http://runner.test');
      const statuses = (await one.all).map((a) => a.statusCode).sort();
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
    });

    test('a long answer takes more tokens: the next requests of that caller wait or are refused sooner', async () => {
      paceMs += 60_000;
      const from = (url: string) => () => inject({ method: 'GET', url, remoteAddress: '192.0.2.3' });
      const spec = await from('/api/docs/json')();
      assert.equal(spec.statusCode, 200);
      assert.ok(String((spec as unknown as { body: string }).body).length > 2 * 16 * 1024, 'the OpenAPI document is longer than two tokens’ worth');
      // One token to start and two (a full bucket, the most one answer costs) for its length: a
      // token in debt counts as one waiting, so two more may wait and the rest are refused.
      const statuses = (await together(5, from('/.well-known/oauth-authorization-server')).all).map((a) => a.statusCode).sort();
      assert.deepEqual(statuses, [200, 200, 429, 429, 429]);
    });
  });
}

/*
 * Requests that cost the loop more than their answer shows: an upload (a file written and hashed,
 * rows, a worker's read) takes ten tokens, and a live log stream one per 16 Ki characters it
 * writes. A bucket of 20 shows what each took: the /api/me requests that may start at once after it.
 */
for (const target of dialects()) {
  describe(`uploads and streamed logs take their caller's tokens (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let paceMs = 0;
    let token = '';
    let projectId = '';
    let runId = '';
    const inject = (o: object) => r.service.app.inject(o as never) as unknown as Promise<Answer & { body: string }>;
    const me = () => inject({ method: 'GET', url: '/api/me', headers: bearer(token) });
    /** Statuses of `n` requests of the user sent together, sorted. */
    const burst = async (n: number) => (await together(n, me).all).map((a) => a.statusCode).sort();

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, env: { RUNNER_CALLER_RATE: '2', RUNNER_CALLER_BURST: '20', RUNNER_CALLER_QUEUE: '3' }, paceClock: () => paceMs });
      token = ((await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json().session as { token: string }).token;
      paceMs += 60_000;
      projectId = (await inject({ method: 'POST', url: '/api/projects', headers: bearer(token), payload: { name: 'p' } })).json().id as string;
      const m = multipart([{ name: 'file', file: makeZip() }]);
      const workflowId = (await inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(token), ...m.headers }, payload: m.payload })).json().id;
      runId = (await inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: bearer(token), payload: {} })).json().id as string;
      const ex = (await inject({ method: 'POST', url: '/api/executors/register', headers: apiKey(API_KEY), payload: { name: 'ex' } })).json();
      const claim = (await inject({ method: 'POST', url: `/api/executors/${ex.id}/claim?wait=0`, headers: apiKey(API_KEY) })).json() as { lease: { token: string } };
      const lease = { leaseToken: claim.lease.token, attempt: 1 };
      // 20 chunks of 16,000 characters: four turns of the stream, four tokens each.
      const chunks = Array.from({ length: 20 }, (_, i) => ({ seq: i + 1, text: 'x'.repeat(16_000) }));
      assert.equal((await inject({ method: 'POST', url: `/api/runs/${runId}/logs`, headers: apiKey(API_KEY), payload: { ...lease, chunks } })).statusCode, 200);
      assert.equal((await inject({ method: 'POST', url: `/api/runs/${runId}/complete`, headers: apiKey(API_KEY), payload: { ...lease, status: 'succeeded' } })).statusCode, 200);
    });
    after(async () => {
      await r?.close();
      await dbh?.drop();
    });

    test('with a full bucket, 20 requests start at once', async () => {
      paceMs += 60_000;
      assert.deepEqual(await burst(20), Array(20).fill(200));
    });

    test('an upload takes ten tokens', async () => {
      paceMs += 60_000;
      const m = multipart([{ name: 'file', file: makeZip() }]);
      const up = await inject({ method: 'POST', url: `/api/projects/${projectId}/workflows`, headers: { ...bearer(token), ...m.headers }, payload: m.payload });
      assert.equal(up.statusCode, 201, up.body);
      // Ten left start at once, three wait for a token, the rest are refused.
      assert.deepEqual(await burst(16), [...Array(13).fill(200), ...Array(3).fill(429)]);
    });

    test('a live log stream takes a token per 16 Ki characters it writes', { timeout: 30_000 }, async () => {
      paceMs += 60_000;
      // Over a socket: the stream writes as the socket takes its writes.
      const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      const stream = await fetch(`${base}/api/runs/${runId}/logs/stream`, { headers: bearer(token) });
      assert.equal(stream.status, 200);
      const body = await stream.text();
      assert.equal(body.match(/^event: log$/gm)?.length, 20, 'the whole log');
      assert.match(body, /event: end\ndata: \{"status":"succeeded"\}/);
      // One token to start, sixteen for the 320,000 characters: three left, three may wait.
      assert.deepEqual(await burst(8), [...Array(6).fill(200), ...Array(2).fill(429)]);
    });
  });
}
