import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { afterEach, beforeEach, describe, test } from 'node:test';
import fc from 'fast-check';
import { MAX_OUTPUT_NAME_BYTES, outputNameProblem } from '../../src/runner/runs/output-storage.js';
import { dialects, tempDir } from '../helpers/db.js';
import { leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, bearer, multipart, startRunner, TestClock, type TestRunner } from './helpers.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
/** Waits (bounded) until `check` holds; for state another task reaches, never for time itself. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

for (const target of dialects()) {
  describe(`executor protocol (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let f: ProtocolFixture;

    beforeEach(async () => {
      dbh = await target.create();
      // A waiting claim never looks at the queue on its own here: only a notification wakes it.
      r = await startRunner({ databaseUrl: dbh.url, claimRecheckMs: 600_000, env: { RUNNER_SWEEP_SECONDS: '3600', RUNNER_MAX_OUTPUT_BYTES: '1K' } });
      f = await protocolFixture(r);
    });
    afterEach(async () => {
      await r.close();
      await dbh.drop();
    });

    test('a long-polling claim is woken by a newly queued run, from RunsService.enqueue', async () => {
      const ex = await f.register();
      const pending = f.claim(ex, 30);
      await until(() => r.service.queue.waiting === 1, 'the claim to wait');
      const run = await f.start();
      // Woken at once by the enqueue, not by a later re-check.
      assert.equal(r.service.queue.waiting, 0);
      const got = await pending;
      assert.equal(got.claim?.run.id, run.id);
    });

    test('labels: a run is claimed only by an executor that has every required label', async () => {
      const plain = await f.register({ labels: ['linux'] });
      const gpu = await f.register({ labels: ['linux', 'gpu', 'cuda'] });
      const bad = await f.inject({ method: 'POST', url: `/api/workflows/${f.workflowId}/runs`, headers: bearer(f.session), payload: { requiredLabels: ['a b'] } });
      assert.equal(bad.statusCode, 400);
      const needsGpu = await f.start({ requiredLabels: ['gpu', 'linux'] });
      const pending = f.claim(plain, 30);
      await until(() => r.service.queue.waiting === 1, 'the claim to wait');
      assert.equal((await f.claim(gpu)).claim?.run.id, needsGpu.id);
      const any = await f.start();
      assert.equal((await pending).claim?.run.id, any.id);
    });

    test('heartbeat instructions: runs no longer held are to be cancelled; drain stops claims at once', async () => {
      const ex = await f.register({ capacity: 3 });
      const a = await f.start();
      const ca = (await f.claim(ex)).claim!;
      const hb = await f.heartbeat(ex, [a.id, 'someone-elses-run']);
      assert.deepEqual(hb.cancel, ['someone-elses-run']);
      assert.equal(hb.drain, false);
      assert.ok(hb.heartbeatMs > 0);
      const claimNow = (wait: number) => f.inject({ method: 'POST', url: `/api/executors/${ex}/claim?wait=${wait}`, headers: apiKey(API_KEY) });
      const pending = claimNow(30);
      await until(() => r.service.queue.waiting === 1, 'the claim to wait');
      const drained = await f.inject({ method: 'POST', url: `/api/executors/${ex}/drain`, headers: apiKey(API_KEY) });
      assert.equal(drained.json().status, 'draining');
      // Told apart from "nothing to run" (204), which an executor would answer by claiming again.
      const held = await pending;
      assert.equal(held.statusCode, 409, 'a held claim of a drained executor ends');
      assert.equal(held.json().code, 'executor_draining');
      assert.ok(Number(held.headers['retry-after']) >= 1);
      assert.equal((await claimNow(30)).json().code, 'executor_draining');
      assert.equal((await f.heartbeat(ex, [a.id])).drain, true);
      // A draining executor still finishes what it holds.
      assert.equal((await f.complete(a.id, leaseOf(ca), 'succeeded')).body.status, 'succeeded');
    });

    test('cancel of a queued run is immediate; a released run is queued again and taken as attempt 2', async () => {
      const q = await f.start();
      const cancel = await f.inject({ method: 'POST', url: `/api/runs/${q.id}/cancel`, headers: bearer(f.session) });
      assert.equal(cancel.json().status, 'cancelled');
      const run = await f.start();
      const ex = await f.register();
      const c1 = (await f.claim(ex)).claim!;
      assert.equal(c1.run.id, run.id);
      const released = await f.inject({ method: 'POST', url: `/api/runs/${run.id}/release`, headers: apiKey(API_KEY), payload: leaseOf(c1) });
      assert.equal(released.json().status, 'queued');
      assert.equal((await f.logs(run.id, leaseOf(c1), [{ seq: 1, text: 'x' }])).statusCode, 409);
      const c2 = (await f.claim(ex)).claim!;
      assert.equal(c2.run.id, run.id);
      assert.equal(c2.lease.attempt, 2);
    });

    test('outputs: uploaded with the lease and a checked sha256, downloaded with read access', async () => {
      const run = await f.start();
      const ex = await f.register();
      const c = (await f.claim(ex)).claim!;
      const put = (name: string, body: Buffer, digest = sha(body), lease = leaseOf(c)) => {
        const m = multipart([
          { name: 'leaseToken', value: lease.leaseToken },
          { name: 'attempt', value: String(lease.attempt) },
          { name: 'sha256', value: digest },
          { name: 'file', file: body, filename: 'x' },
        ]);
        return f.inject({ method: 'PUT', url: `/api/runs/${run.id}/outputs/${name}`, headers: { ...apiKey(API_KEY), ...m.headers }, payload: m.payload });
      };
      const data = Buffer.from('id,value\n1,2\n');
      const wrongSum = await put('report.csv', data, sha('something else'));
      assert.equal(wrongSum.statusCode, 400);
      assert.equal(wrongSum.json().code, 'checksum_mismatch');
      const tooBig = await put('big.bin', Buffer.alloc(1025));
      assert.equal(tooBig.statusCode, 413);
      assert.equal((await put('x'.repeat(201), data)).statusCode, 400);
      for (const name of ['a%2Fb', 'a%5Cb', 'a%00b']) assert.equal((await put(name, data)).statusCode, 400, name);
      // URL parsing may turn `..` into a parent segment first: then no route matches (404).
      for (const name of ['..', '.', '%2E%2E', '%2E']) assert.ok([400, 404].includes((await put(name, data)).statusCode), name);
      assert.equal((await put('report.csv', data, sha(data), { leaseToken: 'rnr_lease_forged', attempt: 1 })).statusCode, 409);
      const noLease = multipart([{ name: 'file', file: data }]);
      assert.equal((await f.inject({ method: 'PUT', url: `/api/runs/${run.id}/outputs/a`, headers: { ...apiKey(API_KEY), ...noLease.headers }, payload: noLease.payload })).statusCode, 400);
      const ok = await put('report.csv', data);
      assert.equal(ok.statusCode, 200, ok.body);
      assert.deepEqual(ok.json(), { name: 'report.csv', size: data.length, sha256: sha(data) });
      // A retried upload replaces the file.
      const data2 = Buffer.from('id,value\n1,3\n');
      assert.equal((await put('report.csv', data2)).statusCode, 200);
      const unicode = Buffer.from('ü');
      assert.equal((await put(encodeURIComponent('résumé ü.txt'), unicode)).statusCode, 200);
      assert.equal((await f.complete(run.id, leaseOf(c), 'succeeded')).statusCode, 200);
      assert.equal((await put('late.txt', data)).statusCode, 409, 'no uploads after completion');

      const list = (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs`, headers: bearer(f.session) })).json().items;
      assert.deepEqual(list.map((o: { name: string; sha256: string }) => [o.name, o.sha256]), [['report.csv', sha(data2)], ['résumé ü.txt', sha(unicode)]]);
      const dl = await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs/report.csv`, headers: bearer(f.session) });
      assert.equal(dl.statusCode, 200);
      assert.deepEqual(dl.rawPayload, data2);
      assert.equal(dl.headers['x-content-sha256'], sha(data2));
      assert.equal(dl.headers['content-type'], 'application/octet-stream');
      assert.match(String(dl.headers['content-disposition']), /^attachment; filename="report.csv"/);
      const dlu = await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs/${encodeURIComponent('résumé ü.txt')}`, headers: bearer(f.session) });
      assert.deepEqual(dlu.rawPayload, unicode);
      assert.equal((await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs/missing`, headers: bearer(f.session) })).statusCode, 404);
      assert.equal((await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs/big.bin`, headers: bearer(f.session) })).statusCode, 404);
    });

    test('output names: every name the upload accepts (200 bytes of UTF-8) goes up and comes down over HTTP; a longer one is a 400 problem, never 414', async () => {
      const run = await f.start();
      const ex = await f.register();
      const lease = leaseOf((await f.claim(ex)).claim!);
      const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      const url = (name: string) => `${base}/api/runs/${run.id}/outputs/${encodeURIComponent(name)}`;
      const put = (name: string, body: Buffer) => {
        const m = multipart([
          { name: 'leaseToken', value: lease.leaseToken },
          { name: 'attempt', value: String(lease.attempt) },
          { name: 'sha256', value: sha(body) },
          { name: 'file', file: body, filename: 'x' },
        ]);
        return fetch(url(name), { method: 'PUT', headers: { ...apiKey(API_KEY), ...m.headers }, body: new Uint8Array(m.payload) });
      };
      const get = (name: string) => fetch(url(name), { headers: bearer(f.session) });

      // Each is exactly MAX_OUTPUT_NAME_BYTES long in UTF-8; percent-encoded, up to 600 characters.
      const longest = ['a'.repeat(196) + '.csv', 'é'.repeat(100), '😀'.repeat(50), '?#%& '.repeat(40), `${'€'.repeat(66)}ab`];
      for (const name of longest) {
        assert.equal(Buffer.byteLength(name), MAX_OUTPUT_NAME_BYTES, name);
        const body = Buffer.from(`content of ${name}`);
        const up = await put(name, body);
        const answer = await up.text();
        assert.equal(up.status, 200, `${name}: ${answer}`);
        assert.equal(JSON.parse(answer).name, name);
        const down = await get(name);
        assert.equal(down.status, 200, name);
        assert.deepEqual(Buffer.from(await down.arrayBuffer()), body, name);
      }
      const listed = (await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs`, headers: bearer(f.session) })).json().items;
      assert.deepEqual(listed.map((o: { name: string }) => o.name).sort(), [...longest].sort());

      // Longer: a problem, however the name is made up. Past the router's limit (200 UTF-16 code
      // units) the path is refused before any route; within it, the upload refuses the name (400
      // naming it) and a download finds no such output (404).
      const problem = async (res: Response, status: number, code: string) => {
        assert.equal(res.status, status);
        assert.match(String(res.headers.get('content-type')), /^application\/problem\+json/);
        const body = await res.json();
        assert.equal(body.code, code);
        return body;
      };
      for (const name of ['a'.repeat(201), 'x'.repeat(5000), '😀'.repeat(101)]) {
        for (const res of [await put(name, Buffer.from('x')), await get(name)]) {
          const body = await problem(res, 400, 'invalid_field');
          assert.deepEqual(body.errors, [{ field: '(path)', message: 'is longer than 200 characters' }]);
        }
      }
      const overBytes = `${'é'.repeat(100)}a`;
      const refused = await problem(await put(overBytes, Buffer.from('x')), 400, 'invalid_output_name');
      assert.match(JSON.stringify(refused), /200 bytes/);
      await problem(await get(overBytes), 404, 'not_found');
      assert.equal((await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs`, headers: bearer(f.session) })).json().items.length, longest.length);
    });

    test('property: every name the upload rule accepts is routed to the output download (404 for one never uploaded, never 400 or 414)', async () => {
      const run = await f.start();
      // Long names matter most here: cut to MAX_OUTPUT_NAME_BYTES at a code point, separators swapped out.
      const fit = (text: string) => {
        let out = '';
        for (const ch of text.replace(/[/\\]/g, '_')) {
          if (Buffer.byteLength(out + ch) > MAX_OUTPUT_NAME_BYTES) break;
          out += ch;
        }
        return out;
      };
      const names = fc.oneof(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }),
        fc.string({ unit: 'binary', minLength: 50, maxLength: 200 }).map(fit),
        fc.string({ unit: 'grapheme-ascii', minLength: 101, maxLength: 200 }).map(fit),
      );
      await fc.assert(
        fc.asyncProperty(names, async (name) => {
          if (outputNameProblem(name) !== null) return;
          const res = await f.inject({ method: 'GET', url: `/api/runs/${run.id}/outputs/${encodeURIComponent(name)}`, headers: bearer(f.session) });
          assert.equal(res.statusCode, 404, `${JSON.stringify(name)}: ${res.body}`);
          assert.match(res.json().detail, /has no output/);
        }),
        { numRuns: 300 },
      );
    });
  });
}

describe('held claims end with their client and with the server', () => {
  test('a client that goes away stops waiting; closing the server answers held claims', async () => {
    const r = await startRunner({ claimRecheckMs: 600_000 });
    let closed = false;
    try {
      const f = await protocolFixture(r);
      const ex = await f.register();
      const base = await r.service.app.listen({ host: '127.0.0.1', port: 0 });
      const gone = new AbortController();
      const req = fetch(`${base}/api/executors/${ex}/claim?wait=30`, { method: 'POST', headers: apiKey(API_KEY), signal: gone.signal }).catch((e: Error) => e);
      await until(() => r.service.queue.waiting === 1, 'the claim to wait');
      gone.abort();
      assert.ok((await req) instanceof Error);
      await until(() => r.service.queue.waiting === 0, 'the abandoned claim to stop');
      const held = fetch(`${base}/api/executors/${ex}/claim?wait=30`, { method: 'POST', headers: apiKey(API_KEY) });
      await until(() => r.service.queue.waiting === 1, 'the claim to wait');
      const closing = r.close();
      closed = true;
      assert.equal((await held).status, 204);
      await closing;
    } finally {
      if (!closed) await r.close();
    }
  });
});

describe('two instances on one PostgreSQL database', { skip: !process.env.TEST_DATABASE_URL && !process.env.CI }, () => {
  test('a run queued through one instance wakes a claim held by the other (LISTEN/NOTIFY)', async () => {
    const target = dialects().find((d) => d.name === 'postgres');
    assert.ok(target, 'TEST_DATABASE_URL is needed');
    const dbh = await target.create();
    const storageDir = tempDir('pier-runner-storage-');
    const clock = new TestClock();
    const env = { RUNNER_STORAGE_DIR: storageDir, RUNNER_SWEEP_SECONDS: '3600' };
    const a = await startRunner({ databaseUrl: dbh.url, clock, env, claimRecheckMs: 600_000 });
    const b = await startRunner({ databaseUrl: dbh.url, clock, env, claimRecheckMs: 600_000 });
    try {
      const fa = await protocolFixture(a);
      const fb = await protocolFixture(b, false);
      const ex = await fb.register();
      const pending = fb.claim(ex, 30);
      await until(() => b.service.queue.waiting === 1, 'the claim on B to wait');
      const run = await fa.start();
      assert.equal((await pending).claim?.run.id, run.id);
    } finally {
      await a.close();
      await b.close();
      await dbh.drop();
      fs.rmSync(storageDir, { recursive: true, force: true });
    }
  });
});
