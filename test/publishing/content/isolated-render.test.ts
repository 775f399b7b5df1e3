// The page renderer's worker: one render at a time, a bounded queue behind it, and a worker
// ended past its time limit replaced by a fresh one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceUnavailableError } from '../../../src/infra/errors.js';
import { isolatedRenderer } from '../../../src/publishing/content/isolated-render.js';
import { renderProductContent } from '../../../src/publishing/content/product-content.js';

const FIELDS = { name: 'Queue', text: '# Title\n\nSome *text*.', changelog: '# Changelog\n\n## [1.0.0] - 2024-01-01\n### Added\n- First' };

describe('isolated content renderer', () => {
  it('renders exactly what renderProductContent renders', async () => {
    const renderer = isolatedRenderer({ timeoutMs: 60_000 });
    try {
      assert.deepEqual(await renderer.render(FIELDS, '5.4', ['files']), renderProductContent(FIELDS, '5.4', ['files']));
    } finally {
      await renderer.close();
    }
  });

  it('refuses renders beyond the queue bound with a 503, and serves the queued ones', async () => {
    const hold = new Int32Array(new SharedArrayBuffer(8));
    const renderer = isolatedRenderer({ timeoutMs: 60_000, maxQueued: 2, hold });
    try {
      const running = renderer.render(FIELDS, null, []);
      while (Atomics.load(hold, 1) === 0) await sleep(5);
      const queued = [renderer.render(FIELDS, null, []), renderer.render(FIELDS, null, [])];
      const refused = await renderer.render(FIELDS, null, []).then(
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
});
