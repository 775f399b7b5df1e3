// PATCH bodies built to cost the server: many unknown keys get a small, bounded answer, and
// the Markdown of a PATCH is checked in a worker thread, never on the serving event loop.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { dialects } from '../../helpers/db.js';
import { patchProduct, type RunningPublishing, startPublishing } from '../../helpers/publishing.js';

const manyKeys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [i.toString(36), 0]));

for (const target of dialects()) {
  describe(`hostile PATCH bodies on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let pier: RunningPublishing;
    let token: string;
    const hold = new Int32Array(new SharedArrayBuffer(8));

    before(async () => {
      db = await target.create();
      // A time limit no busy machine reaches: what is tested is where the check runs.
      pier = await startPublishing(db.url, { failureLimits: { maxFailures: 1000 }, validationHold: hold }, { PIER_PAGE_RENDER_TIMEOUT_SECONDS: '600' });
      // Validations pass the hold unless a test closes it.
      Atomics.store(hold, 0, 1);
      token = (await pier.service.products.register('keys-ext', { name: 'Keys' })).editToken;
    });
    after(async () => {
      Atomics.store(hold, 0, 1);
      Atomics.notify(hold, 0);
      await pier.close();
      await db.drop();
    });

    it('answers a body of 170,000 unknown keys with a short problem+json and stores nothing', async () => {
      const res = await fetch(`${pier.url}/api/products/keys-ext`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Renamed', ...manyKeys(170_000) }),
      });
      const text = await res.text();
      assert.equal(res.status, 400);
      assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
      assert.ok(text.length < 8_000, `answer of ${text.length} characters`);
      const body = JSON.parse(text) as { detail: string; errors: { field: string }[] };
      assert.ok(body.errors.length >= 1 && body.errors.length <= 20, `${body.errors.length} errors listed`);
      assert.equal(body.errors[0]?.field, '(body)');
      assert.match(body.detail, /170001 fields/);
      assert.equal((await pier.service.products.show('keys-ext')).name, 'Keys');
    });

    it('lists at most 20 problems and says how many there are', async () => {
      const res = await patchProduct(pier.url, 'keys-ext', token, { ...manyKeys(30), name: '' });
      assert.equal(res.status, 400);
      const errors = res.json.errors as { field: string }[];
      assert.equal(errors.length, 20);
      assert.match(String(res.json.detail), /^31 invalid field\(s\)/);
      assert.match(String(res.json.detail), /first 20 listed/);
    });

    it('also caps the keys of style and contact', async () => {
      const res = await patchProduct(pier.url, 'keys-ext', token, { style: manyKeys(50_000) });
      assert.equal(res.status, 400);
      assert.ok((res.json.errors as unknown[]).length <= 20);
      assert.equal((res.json.errors as { field: string }[])[0]?.field, 'style');
    });

    it('checks the Markdown of a PATCH in the worker while the event loop answers others', async () => {
      Atomics.store(hold, 0, 0);
      const before = Atomics.load(hold, 1);
      const items = Array.from({ length: 2000 }, (_, i) => `- item ${i} [r${i}]`);
      const refs = Array.from({ length: 2000 }, (_, i) => `[r${i}]: https://example.test/${i}`);
      const changelog = ['# Changelog', '', '## [1.0.0] - 2024-01-01', '### Added', ...items, '', ...refs].join('\n');
      let answered = false;
      const patch = patchProduct(pier.url, 'keys-ext', token, { changelog, faq: '## Why?\n\nBecause.' }).finally(() => {
        answered = true;
      });
      while (Atomics.load(hold, 1) === before) {
        if (answered) throw new Error('the PATCH was answered without its validation passing through the worker');
        await sleep(5);
      }
      // The validation sits in the worker: the serving loop still answers.
      const health = await fetch(`${pier.url}/healthz`);
      assert.equal(health.status, 200);
      const view = await fetch(`${pier.url}/api/products/keys-ext`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(view.status, 200);
      assert.equal(answered, false);
      Atomics.store(hold, 0, 1);
      Atomics.notify(hold, 0);
      const res = await patch;
      assert.equal(res.status, 200, JSON.stringify(res.json));
      assert.equal(Atomics.load(hold, 1), before + 1);
    });

    it('reports Markdown problems found in the worker with their field and line', async () => {
      const res = await patchProduct(pier.url, 'keys-ext', token, { changelog: '# Changelog\n\n## 1.0 - someday\n- x', name: '' });
      assert.equal(res.status, 400);
      const fields = (res.json.errors as { field: string; line?: number }[]).map((e) => e.field);
      assert.ok(fields.includes('changelog'), JSON.stringify(res.json));
      assert.ok(fields.includes('name'), JSON.stringify(res.json));
    });
  });
}
