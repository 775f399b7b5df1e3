// The page renderer's workers: one render per worker, a bounded queue behind them, a worker
// ended past its time limit replaced by a fresh one, and renders shared fairly between products
// (one worker and one queue place per product at most, a render-time budget per product).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceUnavailableError } from '../../../src/infra/errors.js';
import { isolatedRenderer, RenderDeferred } from '../../../src/publishing/web/isolated-render.js';
import { renderProductContent } from '../../../src/publishing/content/product-content.js';

const FIELDS = { name: 'Queue', text: '# Title\n\nSome *text*.', changelog: '# Changelog\n\n## [1.0.0] - 2024-01-01\n### Added\n- First' };

describe('isolated content renderer', () => {
  it('renders exactly what renderProductContent renders', async () => {
    const renderer = isolatedRenderer({ timeoutMs: 60_000 });
    try {
      assert.deepEqual(await renderer.render(FIELDS, '5.4', ['files'], 'queue'), renderProductContent(FIELDS, '5.4', ['files']));
    } finally {
      await renderer.close();
    }
  });

  it('refuses renders beyond the queue bound with a 503, and serves the queued ones', async () => {
    const hold = new Int32Array(new SharedArrayBuffer(8));
    const renderer = isolatedRenderer({ timeoutMs: 60_000, maxQueued: 2, hold });
    try {
      const running = renderer.render(FIELDS, null, [], 'a');
      while (Atomics.load(hold, 1) === 0) await sleep(5);
      const queued = [renderer.render(FIELDS, null, [], 'b'), renderer.render(FIELDS, null, [], 'c')];
      const refused = await renderer.render(FIELDS, null, [], 'd').then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(refused instanceof ServiceUnavailableError);
      assert.equal(refused.status, 503);
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      Atomics.store(hold, 0, 1);
      Atomics.notify(hold, 0);
      const done = await Promise.all([running, ...queued]);
      assert.equal(done.length, 3);
      assert.equal(Atomics.load(hold, 1), 3);
    } finally {
      await renderer.close();
    }
  });

  /** Settles to 'pending' when `p` has not settled by the time already-queued callbacks ran. */
  async function stateOf(p: Promise<unknown>): Promise<'pending' | 'settled'> {
    const mark = Symbol('pending');
    const r = await Promise.race([p.then(() => 'settled' as const, () => 'settled' as const), new Promise<typeof mark>((resolve) => setImmediate(() => resolve(mark)))]);
    return r === mark ? 'pending' : r;
  }

  function release(hold: Int32Array): void {
    Atomics.store(hold, 0, 1);
    Atomics.notify(hold, 0);
  }

  it("a product whose render is held does not delay another product's render", async () => {
    const hold = new Int32Array(new SharedArrayBuffer(8));
    const renderer = isolatedRenderer({ timeoutMs: 60_000, workers: 2, hold: (product) => (product === 'slow' ? hold : undefined) });
    try {
      const slow = renderer.render(FIELDS, null, [], 'slow');
      while (Atomics.load(hold, 1) === 0) await sleep(5);
      // Rendered by the other worker while the slow product's render still sits in its hold.
      assert.deepEqual(await renderer.render(FIELDS, '5.4', [], 'quick'), renderProductContent(FIELDS, '5.4', []));
      assert.equal(await stateOf(slow), 'pending');
      release(hold);
      await slow;
    } finally {
      release(hold);
      await renderer.close();
    }
  });

  it('a product never holds more than one worker: its next render waits for its running one', async () => {
    const hold = new Int32Array(new SharedArrayBuffer(8));
    const renderer = isolatedRenderer({ timeoutMs: 60_000, workers: 2, hold: (product) => (product === 'slow' ? hold : undefined) });
    try {
      const first = renderer.render(FIELDS, null, [], 'slow');
      while (Atomics.load(hold, 1) === 0) await sleep(5);
      const second = renderer.render({ ...FIELDS, text: 'Second' }, null, [], 'slow');
      // The second worker is still free for another product.
      await renderer.render(FIELDS, null, [], 'quick');
      assert.equal(Atomics.load(hold, 1), 1, 'the same product started a second render beside its running one');
      assert.equal(await stateOf(second), 'pending');
      release(hold);
      assert.match((await second).textHtml, /Second/);
      await first;
      assert.equal(Atomics.load(hold, 1), 2);
    } finally {
      release(hold);
      await renderer.close();
    }
  });

  it('a product over its render-time budget is deferred with a 503 and Retry-After while another renders at once; its budget refills', async () => {
    const hold = new Int32Array(new SharedArrayBuffer(8));
    let clock = 1_000_000;
    const renderer = isolatedRenderer({
      timeoutMs: 60_000,
      budget: { burstMs: 30_000, share: 0.1 },
      now: () => clock,
      hold: (product) => (product === 'hostile' ? hold : undefined),
    });
    try {
      // Cheap renders (no time passes on the injected clock) never use the budget up.
      release(hold);
      for (let i = 0; i < 5; i++) await renderer.render(FIELDS, null, [], 'hostile');
      Atomics.store(hold, 0, 0);
      const costly = renderer.render(FIELDS, null, [], 'hostile');
      while (Atomics.load(hold, 1) < 6) await sleep(5);
      clock += 60_000; // this render took a minute of (injected) time: twice the burst
      release(hold);
      await costly;

      const deferred = await renderer.render(FIELDS, null, [], 'hostile').then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(deferred instanceof RenderDeferred);
      assert.equal(deferred.status, 503);
      // 30 s of debt paid back at a tenth of wall time.
      assert.equal(deferred.headers['retry-after'], '301');
      assert.equal(Atomics.load(hold, 1), 6, 'a deferred render never reaches a worker');
      // Another product is rendered at once.
      assert.deepEqual(await renderer.render(FIELDS, null, [], 'other'), renderProductContent(FIELDS, null, []));

      clock += 299_000;
      await assert.rejects(renderer.render(FIELDS, null, [], 'hostile'), RenderDeferred);
      clock += 2_000;
      await renderer.render(FIELDS, null, [], 'hostile');
      assert.equal(Atomics.load(hold, 1), 7);
    } finally {
      release(hold);
      await renderer.close();
    }
  });
});
