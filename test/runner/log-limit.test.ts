import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import fc from 'fast-check';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { logLimitMarker, utf8Prefix, withinLogLimit } from '../../src/runner/runs/log-limit.js';
import { dialects } from '../helpers/db.js';
import { leaseOf, type ProtocolFixture, protocolFixture } from './executor-fixtures.js';
import { API_KEY, apiKey, startRunner, type TestRunner } from './helpers.js';

const bytes = (s: string) => Buffer.byteLength(s);

describe('the log limit of one attempt (RUNNER_MAX_LOG_BYTES)', () => {
  test('utf8Prefix: the longest start within the limit, never half a character', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 60 }), fc.nat(200), (text, max) => {
        const head = utf8Prefix(text, max);
        assert.ok(text.startsWith(head));
        assert.ok(bytes(head) <= max);
        // Maximal: the next character (a whole surrogate pair) would not fit.
        if (head.length < text.length) {
          const next = text.codePointAt(head.length)!;
          const paired = next > 0xffff && head.length + 1 < text.length;
          assert.ok(bytes(head) + bytes(text.slice(head.length, head.length + (paired ? 2 : 1))) > max);
        }
        // A lone surrogate is never split from its partner.
        const last = head.charCodeAt(head.length - 1);
        if (last >= 0xd800 && last <= 0xdbff) assert.ok(!((text.charCodeAt(head.length) & 0xfc00) === 0xdc00));
      }),
    );
  });

  test('withinLogLimit: what is stored is a prefix of the log, then the marker once; never past the limit plus the marker', () => {
    const chunk = fc.record({ text: fc.string({ unit: 'grapheme', maxLength: 40 }) });
    fc.assert(
      fc.property(fc.array(fc.array(chunk, { maxLength: 6 }), { maxLength: 6 }), fc.integer({ min: 1, max: 120 }), (batches, max) => {
        let used = 0;
        let seq = 0;
        let stored = '';
        let sent = '';
        let wasFull = false;
        for (const batch of batches) {
          const numbered = batch.map((c) => ({ seq: ++seq, text: c.text }));
          sent += numbered.map((c) => c.text).join('');
          const r = withinLogLimit(numbered, used, max);
          if (wasFull) assert.deepEqual(r.stored, [], 'nothing is stored once full');
          stored += r.stored.map((c) => c.text).join('');
          used = r.bytes;
          assert.equal(used, bytes(stored));
          wasFull = r.full;
        }
        const marker = logLimitMarker(max);
        if (wasFull) {
          assert.ok(stored.endsWith(marker));
          assert.equal(stored.split(marker).length, 2, 'the marker once');
          const kept = stored.slice(0, -marker.length).replace(/\n$/, '');
          assert.ok(sent.startsWith(kept));
          assert.ok(bytes(stored) <= max + 1 + bytes(marker));
        } else {
          assert.equal(stored, sent);
          assert.ok(bytes(stored) <= max);
        }
      }),
    );
  });
});

for (const target of dialects()) {
  describe(`log limit enforced by the runner (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let f: ProtocolFixture;

    beforeEach(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, claimRecheckMs: 600_000, env: { RUNNER_SWEEP_SECONDS: '3600', RUNNER_MAX_LOG_BYTES: '1K' } });
      f = await protocolFixture(r);
    });
    afterEach(async () => {
      await r.close();
      await dbh.drop();
    });

    const storedText = async (runId: string, attempt?: number) => {
      const q = attempt ? `&attempt=${attempt}` : '';
      const page = (await f.inject({ method: 'GET', url: `/api/runs/${runId}/logs?limit=1000${q}`, headers: apiKey(API_KEY) })).json();
      return page.items.map((l: { text: string }) => l.text).join('');
    };

    test('an executor sending more than the limit: the log is cut at 1 KiB with one marker line, later chunks are acknowledged and dropped', async () => {
      const ex = await f.register();
      const run = await f.start();
      const claimed = (await f.claim(ex)).claim!;
      const lease = leaseOf(claimed);
      const line = (n: number) => `${String(n).padStart(4, '0')} ${'é'.repeat(100)}\n`; // 206 bytes
      const first = await f.logs(run.id, lease, [1, 2, 3, 4].map((seq) => ({ seq, text: line(seq) })));
      assert.equal(first.statusCode, 200);
      assert.deepEqual(first.body, { ack: 4, full: false });
      const crossing = await f.logs(run.id, lease, [5, 6, 7].map((seq) => ({ seq, text: line(seq) })));
      assert.deepEqual(crossing.body, { ack: 7, full: true });
      // A hostile executor keeps sending, in and out of order: nothing more is stored.
      for (let i = 0; i < 20; i++) {
        const seqs = [8 + i * 50, 9 + i * 50, 30 + i * 50];
        const more = await f.logs(run.id, lease, seqs.map((seq) => ({ seq, text: 'x'.repeat(16_000) })));
        assert.equal(more.statusCode, 200, JSON.stringify(more.body));
        assert.equal(more.body.full, true);
      }
      const text = await storedText(run.id);
      const marker = logLimitMarker(1024);
      assert.ok(text.endsWith(marker), text.slice(-300));
      assert.equal(text.split(marker).length, 2);
      const kept = text.slice(0, -marker.length);
      assert.equal(kept, `${utf8Prefix([1, 2, 3, 4, 5, 6, 7].map(line).join(''), 1024)}\n`);
      assert.ok(bytes(kept) <= 1025);
      // The database holds the cut log and nothing of what came after.
      const db = await openRunnerDatabase(dbh.url);
      try {
        const rows = await db.db.selectFrom('run_logs').select(['seq', 'text']).where('run_id', '=', run.id).execute();
        assert.deepEqual(rows.map((x) => x.seq).sort((a, b) => a - b), [1, 2, 3, 4, 5]);
        assert.ok(rows.reduce((n, x) => n + bytes(x.text), 0) <= 1024 + 1 + bytes(marker));
      } finally {
        await db.close();
      }
      assert.equal((await f.complete(run.id, lease, 'succeeded')).statusCode, 200);
    });

    test('two instances taking chunks of one attempt at once: the limit and the one marker line hold', async () => {
      const other = await startRunner({ databaseUrl: dbh.url, claimRecheckMs: 600_000, env: { RUNNER_SWEEP_SECONDS: '3600', RUNNER_MAX_LOG_BYTES: '1K' } });
      try {
        const g = await protocolFixture(other, false);
        const ex = await f.register();
        const run = await f.start();
        const lease = leaseOf((await f.claim(ex)).claim!);
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? f : g).logs(run.id, lease, [{ seq: 2 * i + 1, text: 'a'.repeat(300) }, { seq: 2 * i + 2, text: 'b'.repeat(300) }])),
        );
        assert.ok(answers.every((a) => a.statusCode === 200), JSON.stringify(answers.find((a) => a.statusCode !== 200)));
        const text = await storedText(run.id);
        const marker = logLimitMarker(1024);
        assert.equal(text.split(marker).length, 2, 'one marker line');
        assert.ok(Buffer.byteLength(text) <= 1024 + 1 + Buffer.byteLength(marker), `${Buffer.byteLength(text)} bytes stored`);
        // Every chunk sent is acknowledged (stored or dropped): the executor sends none again.
        assert.equal((await f.logs(run.id, lease, [{ seq: 40, text: 'x' }])).body.ack, 40);
      } finally {
        await other.close();
      }
    });

    test('each attempt has its own limit: a re-queued run logs again from nothing', async () => {
      const ex = await f.register();
      const run = await f.start();
      const one = leaseOf((await f.claim(ex)).claim!);
      assert.equal((await f.logs(run.id, one, [{ seq: 1, text: 'a'.repeat(2000) }])).body.full, true);
      const release = await f.inject({ method: 'POST', url: `/api/runs/${run.id}/release`, headers: apiKey(API_KEY), payload: one });
      assert.equal(release.statusCode, 200, release.body);
      const two = leaseOf((await f.claim(ex)).claim!);
      assert.equal(two.attempt, 2);
      assert.deepEqual((await f.logs(run.id, two, [{ seq: 1, text: 'second\n' }])).body, { ack: 1, full: false });
      assert.equal(await storedText(run.id, 2), 'second\n');
    });
  });
}
