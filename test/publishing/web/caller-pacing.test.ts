/**
 * Each address calling the web part is served at its own pace (PIER_CALLER_RATE, _BURST, _QUEUE):
 * one address's burst of API requests past its bucket waits, past its queue gets 429
 * problem+json with Retry-After, while another address is answered; a made-up token per request
 * gets no bucket of its own; pages answered from memory (the fast path) are never paced. The pacing clock is held still
 * during a burst, so which requests start, wait or are refused does not depend on the machine.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../../helpers/db.js';
import { type Site, startSite } from './helpers.js';

const PACE = { PIER_CALLER_RATE: '2', PIER_CALLER_BURST: '2', PIER_CALLER_QUEUE: '3' };

for (const target of dialects()) {
  describe(`each caller of the web part is paced on its own (${target.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    let web: Site;
    let paceMs = 0;
    const tokens: Record<string, string> = {};

    before(async () => {
      db = await target.create();
      // Page answers are kept a minute: the fast path answers repeated views from memory.
      web = await startSite(db.url, { paceClock: () => paceMs, pageFreshMs: 60_000 }, PACE);
      for (const id of ['flood-ext', 'calm-ext']) {
        paceMs += 60_000;
        tokens[id] = await web.register(id, { name: id });
      }
      await web.setState('calm-ext', 'live');
      paceMs += 60_000; // every bucket full again
    });

    // Reports are built in the catalog worker: it is started here, not by the first request
    // measured against a burst (a worker's first start under load takes longer than the burst waits).
    before(async () => {
      for (const id of ['flood-ext', 'calm-ext']) assert.equal((await stats(id, '127.0.0.3')).status, 200);
      paceMs += 60_000;
    });
    after(async () => {
      await web?.close();
      await db?.drop();
    });

    /** A GET from a loopback address of its own (127.0.0.2 stands for another machine). */
    const get = (path: string, from: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; retryAfter: string | null; type: string | null; body: string }>((resolve, reject) => {
        http.get(`${web.url}${path}`, { localAddress: from, headers, agent: false }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => {
            body += c;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: (res.headers['retry-after'] as string) ?? null, type: res.headers['content-type'] ?? null, body }));
        }).on('error', reject);
      });
    const stats = (id: string, from = '127.0.0.1') => get(`/api/products/${id}/stats`, from, { authorization: `Bearer ${tokens[id]}` });

    test("one address's burst waits, then is refused past its queue, while another address is answered", async () => {
      let settled = 0;
      const burst = Promise.all(
        Array.from({ length: 10 }, () =>
          stats('flood-ext').then((r) => {
            settled++;
            return r;
          }),
        ),
      );
      // Let the ten arrive (two start, three wait, five are refused), then another machine asks.
      await new Promise((r) => setTimeout(r, 200));
      const calm = await stats('calm-ext', '127.0.0.2');
      assert.equal(calm.status, 200);
      assert.ok(settled < 10, `the other vendor was answered while the burst still waited (${settled} of 10 answered)`);
      const answers = await burst;
      assert.deepEqual(
        answers.map((a) => a.status).sort(),
        [200, 200, 200, 200, 200, 429, 429, 429, 429, 429],
      );
      for (const a of answers.filter((x) => x.status === 429)) {
        assert.match(a.type ?? '', /application\/problem\+json/);
        assert.ok(Number(a.retryAfter) >= 1, `Retry-After ${a.retryAfter}`);
        assert.match(a.body, /too_many_requests/);
      }
    });

    test('a made-up token per request gets no bucket of its own', async () => {
      paceMs += 60_000;
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => get(`/nodes?q=t${i}`, '127.0.0.1', { authorization: `Bearer made-up-${i}` })));
      assert.deepEqual(
        answers.map((a) => a.status).sort(),
        [200, 200, 200, 200, 200, 429, 429, 429, 429, 429],
      );
    });

    test('requests without a token are paced by address; pages answered from memory are not', async () => {
      paceMs += 60_000;
      // The page is answered once by the app (and filed), then from memory.
      assert.equal((await fetch(`${web.url}/product/calm-ext`)).status, 200);
      paceMs += 60_000;
      // Each on a connection of its own: a connection that carried a request for the app stays with the app.
      const fresh = () =>
        new Promise<number>((resolve, reject) => {
          http.get(`${web.url}/product/calm-ext`, { agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          }).on('error', reject);
        });
      const pages = await Promise.all(Array.from({ length: 20 }, fresh));
      assert.deepEqual([...new Set(pages)], [200], `twenty page views from one address, none paced: ${pages}`);
      const searches = await Promise.all(Array.from({ length: 10 }, (_, i) => fetch(`${web.url}/nodes?q=x${i}`).then((r) => r.status)));
      assert.equal(searches.filter((s) => s === 429).length, 5, `searches: ${searches}`);
    });
  });
}
