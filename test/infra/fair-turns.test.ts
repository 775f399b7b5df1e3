// Turns on the serving loop: one caller's burst never runs back to back ahead of another
// caller's request, each queued start is a turn of the loop of its own, and the queue is bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FairTurns } from '../../src/infra/fair-turns.js';

/** Asks a turn for each caller in `burst` in one turn of the loop; answers the order they started in. */
async function startOrder(turns: FairTurns, burst: string[]): Promise<number[]> {
  const order: number[] = [];
  await Promise.all(
    burst.map(async (caller, i) => {
      const waiting = turns.turn(caller);
      if (waiting) await waiting;
      order.push(i);
    }),
  );
  return order;
}

test('a caller alone on a quiet loop starts at once', async () => {
  const turns = new FairTurns();
  assert.equal(turns.turn('a'), undefined);
  await new Promise((r) => setImmediate(r));
  assert.equal(turns.turn('a'), undefined, 'a later turn of the loop is quiet again');
});

test("another caller's request starts second or third, not after a burst of ten", async () => {
  const burst = [...Array.from({ length: 10 }, () => 'attacker'), 'victim'];
  const order = await startOrder(new FairTurns(), burst);
  assert.ok(order.indexOf(10) <= 2, `the victim started at ${order.indexOf(10)}: ${order}`);
  assert.deepEqual(
    order.filter((i) => i < 10),
    Array.from({ length: 10 }, (_, i) => i),
    "a caller's own requests start in the order they came",
  );
});

test('each queued request starts in a turn of the loop of its own: I/O callbacks run between them', async () => {
  const turns = new FairTurns();
  let ticks = 0;
  const tick = setInterval(() => ticks++, 0);
  const seen: number[] = [];
  await Promise.all(
    Array.from({ length: 5 }, async () => {
      const waiting = turns.turn('a');
      if (waiting) await waiting;
      seen.push(ticks);
      // Synchronous work, as an SQLite query is: the next start must wait for another turn.
      const end = Date.now() + 3;
      while (Date.now() < end);
    }),
  );
  clearInterval(tick);
  assert.equal(new Set(seen).size >= 3, true, `timer ticks seen at each start: ${seen}`);
});

test('past its bound, requests start at once rather than queue without end', async () => {
  const turns = new FairTurns(3);
  assert.equal(turns.turn('a'), undefined);
  const queued = [turns.turn('a'), turns.turn('a'), turns.turn('a')];
  assert.ok(queued.every((w) => w instanceof Promise));
  assert.equal(turns.size, 3);
  assert.equal(turns.turn('a'), undefined, 'the fourth waiting one starts at once');
  await Promise.all(queued);
  assert.equal(turns.size, 0);
});

test("property: the k-th request of a caller starts within k+1 rounds of every caller's, whatever the burst", async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.constantFrom('a', 'b', 'c', 'd'), { minLength: 1, maxLength: 60 }), async (burst) => {
      const order = await startOrder(new FairTurns(), burst);
      assert.equal(order.length, burst.length);
      const callers = new Set(burst).size;
      const seen = new Map<string, number>();
      for (const [i, caller] of burst.entries()) {
        const k = seen.get(caller) ?? 0;
        seen.set(caller, k + 1);
        const position = order.indexOf(i);
        assert.ok(position <= 1 + (k + 1) * callers, `request ${i} (${caller} #${k}) started at ${position} in ${burst.join('')}`);
      }
    }),
    { numRuns: 200 },
  );
});
