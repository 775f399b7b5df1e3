/**
 * Each caller of the web part is served at its own pace (PIER_CALLER_RATE, _BURST, _QUEUE): one
 * vendor's burst of API requests past its bucket waits, past its queue gets 429 problem+json with
 * Retry-After, while another vendor is answered; requests without a token are paced per address;
 * pages answered from memory (the fast path) are never paced. The pacing clock is held still
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
    after(async () => {
      await web?.close();
      await db?.drop();
    });

    const stats = (id: string) => fetch(`${web.url}/api/products/${id}/stats`, { headers: { authorization: `Bearer ${tokens[id]}` } });

    test("one vendor's burst waits, then is refused past its queue, while another vendor is answered", async () => {
      let settled = 0;
      const burst = Promise.all(
        Array.from({ length: 10 }, () =>
          stats('flood-ext').then(async (r) => {
            settled++;
            return { status: r.status, retryAfter: r.headers.get('retry-after'), type: r.headers.get('content-type'), body: await r.text() };
          }),
        ),
      );
      // Let the ten arrive (two start, three wait, five are refused), then the other vendor asks.
      await new Promise((r) => setTimeout(r, 200));
      const calm = await stats('calm-ext');
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
