// The per-product render-time budget, on an injected clock: ordinary edits are never throttled,
// a product whose renders take seconds gets at most its share of wall time, and budgets refill.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderBudget } from '../../../src/publishing/content/render-budget.js';

describe('render budget', () => {
  it('never throttles ordinary edits: a 50 ms render every 5 s, for a day', () => {
    let clock = 0;
    const budget = renderBudget({ burstMs: 30_000, share: 0.1, now: () => clock });
    for (let i = 0; i < (24 * 3600) / 5; i++) {
      assert.equal(budget.waitMs('vendor'), 0);
      budget.charge('vendor', 50);
      clock += 5_000;
    }
  });

  it('holds a product rendering 5 s at every chance to about a tenth of wall time, alone', () => {
    let clock = 0;
    const budget = renderBudget({ burstMs: 30_000, share: 0.1, now: () => clock });
    let used = 0;
    const hour = 3_600_000;
    while (clock < hour) {
      const wait = budget.waitMs('hostile');
      if (wait > 0) {
        // Another product is never affected.
        assert.equal(budget.waitMs('other'), 0);
        clock += wait;
        continue;
      }
      budget.charge('hostile', 5_000);
      used += 5_000;
      clock += 5_000;
    }
    // The burst plus a tenth of the hour (and at most one render more).
    assert.ok(used <= 30_000 + hour * 0.1 + 5_000, `used ${used} ms`);
    assert.ok(used >= hour * 0.1 - 5_000, `used ${used} ms`);
  });

  it('refills: the wait it names is enough, and the full burst comes back', () => {
    let clock = 1_000;
    const budget = renderBudget({ burstMs: 10_000, share: 0.2, now: () => clock });
    budget.charge('p', 14_000);
    const wait = budget.waitMs('p');
    assert.ok(wait > 0);
    // 4 s of debt paid back at a fifth of wall time: 20 s.
    assert.ok(wait >= 20_000 && wait <= 20_010, `wait ${wait}`);
    clock += wait / 2;
    assert.ok(budget.waitMs('p') > 0);
    clock += wait / 2;
    assert.equal(budget.waitMs('p'), 0);
    clock += 60_000;
    budget.charge('p', 9_999);
    assert.equal(budget.waitMs('p'), 0, 'the bucket refilled to the whole burst');
  });
});
