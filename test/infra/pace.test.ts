// Pacing per caller with an injected clock: a caller within its bucket starts at once, one past
// it waits for its token (in order), past its waiting bound it is refused with the time until it
// would start at once, and idle callers are forgotten.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type Pace, Pacer } from '../../src/infra/pace.js';

function clock(): { now: () => number; t: number } {
  const c = { t: 1_000, now: () => c.t };
  return c;
}

const waitOf = (p: Pace): number => {
  assert.ok(!('refused' in p), `refused: ${JSON.stringify(p)}`);
  return p.wait;
};

test('a burst within the bucket starts at once; the next waits one interval each, in order', () => {
  const c = clock();
  const pacer = new Pacer({ rate: 10, burst: 3, maxWaiting: 5 }, c.now);
  assert.deepEqual([1, 2, 3].map(() => waitOf(pacer.take('a'))), [0, 0, 0]);
  assert.deepEqual([1, 2].map(() => waitOf(pacer.take('a'))), [100, 200]);
  assert.equal(pacer.waiting('a'), 2);
  assert.equal(waitOf(pacer.take('b')), 0, 'another caller has a bucket of its own');
  c.t += 100;
  assert.equal(pacer.waiting('a'), 1, 'the first waiting one has started');
  c.t += 100;
  assert.equal(pacer.waiting('a'), 0);
  assert.equal(waitOf(pacer.take('a')), 100, 'the bucket is empty: a token every 100 ms');
  c.t += 1_000;
  assert.deepEqual([1, 2, 3].map(() => waitOf(pacer.take('a'))), [0, 0, 0], 'a second later the bucket is full again');
});

test('past its waiting bound a caller is refused, with the time until it would start at once', () => {
  const c = clock();
  const pacer = new Pacer({ rate: 1, burst: 2, maxWaiting: 3 }, c.now);
  const answers = Array.from({ length: 10 }, () => pacer.take('a'));
  assert.deepEqual(answers.slice(0, 5).map(waitOf), [0, 0, 1_000, 2_000, 3_000]);
  for (const refused of answers.slice(5)) assert.deepEqual(refused, { refused: true, retryAfterMs: 4_000 });
  assert.equal(pacer.waiting('a'), 3, 'refusals take no token and queue nothing');
  c.t += 1_000;
  assert.equal(waitOf(pacer.take('a')), 3_000, 'one started, so one more may wait');
  assert.equal('refused' in pacer.take('a'), true);
  assert.equal(waitOf(pacer.take('b')), 0, 'a refused caller does not hold back another');
});

test('a bound of 0 waiting refuses every request past the bucket', () => {
  const pacer = new Pacer({ rate: 5, burst: 1, maxWaiting: 0 }, clock().now);
  assert.equal(waitOf(pacer.take('a')), 0);
  assert.deepEqual(pacer.take('a'), { refused: true, retryAfterMs: 200 });
});

test('callers whose bucket is full again are forgotten; the map is capped against a spray of callers', () => {
  const c = clock();
  const pacer = new Pacer({ rate: 100, burst: 2, maxWaiting: 4 }, c.now);
  for (let i = 0; i < 1_000; i++) pacer.take(`address-${i}`);
  assert.equal(pacer.callers, 1_000, 'all seen within the last 20 ms');
  c.t += 20; // every bucket full again (2 tokens at 100/s)
  for (let i = 0; i < 600; i++) pacer.take('steady');
  assert.ok(pacer.callers <= 1, `forgotten as requests come: ${pacer.callers} left`);
  const capped = new Pacer({ rate: 1, burst: 1, maxWaiting: 0, maxCallers: 50 }, clock().now);
  for (let i = 0; i < 1_000; i++) capped.take(`address-${i}`);
  assert.equal(capped.callers, 50);
});

test('a charge after the fact makes the next requests wait longer; one charge costs at most a full bucket', () => {
  const c = clock();
  const pacer = new Pacer({ rate: 10, burst: 3, maxWaiting: 5 }, c.now);
  assert.equal(waitOf(pacer.take('a')), 0);
  pacer.charge('a', 2);
  assert.equal(waitOf(pacer.take('a')), 100, 'one token left after three, then one every 100 ms');
  c.t += 10_000;
  pacer.charge('a', 1_000);
  assert.equal(waitOf(pacer.take('a')), 100, 'a full bucket taken, not a thousand tokens');
  pacer.charge('b', 0);
  assert.equal(pacer.callers, 1, 'a charge of nothing remembers no one');
});

test('charges of many answers at once owe at most the bucket and the queue beyond now', () => {
  const c = clock();
  const pacer = new Pacer({ rate: 10, burst: 3, maxWaiting: 5 }, c.now);
  // 456 long answers in flight, each charging a full bucket: without a bound, 137 s of waiting.
  for (let i = 0; i < 456; i++) pacer.charge('a', 1_000);
  c.t += (3 + 5) * 100;
  assert.equal(waitOf(pacer.take('a')), 0, 'after (burst + queue) / rate the caller starts again');
});

/** Arrivals: each a caller, a gap (ms) after the previous one, and tokens charged after it started. */
const arrivals = fc.array(
  fc.record({ caller: fc.constantFrom('a', 'b', 'c'), gap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 400 })), charge: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 })) }),
  {
    minLength: 1,
    maxLength: 200,
  },
);
const limits = fc.record({ rate: fc.integer({ min: 1, max: 50 }), burst: fc.integer({ min: 1, max: 10 }), maxWaiting: fc.integer({ min: 0, max: 8 }) });

test('property: in any window of T seconds a caller starts at most burst + rate·T requests, charges or not', () => {
  fc.assert(
    fc.property(limits, arrivals, ({ rate, burst, maxWaiting }, seq) => {
      const c = clock();
      const pacer = new Pacer({ rate, burst, maxWaiting }, c.now);
      const starts = new Map<string, number[]>();
      for (const { caller, gap, charge } of seq) {
        c.t += gap;
        const p = pacer.take(caller);
        if ('refused' in p) continue;
        const list = starts.get(caller) ?? [];
        list.push(c.t + p.wait);
        starts.set(caller, list);
        pacer.charge(caller, charge);
      }
      for (const list of starts.values()) {
        for (let i = 0; i < list.length; i++) {
          for (let j = i; j < list.length; j++) {
            const windowSeconds = (list[j]! - list[i]!) / 1000;
            const inWindow = j - i + 1;
            assert.ok(inWindow <= burst + rate * windowSeconds + 1e-6, `${inWindow} starts in ${windowSeconds}s at rate ${rate}, burst ${burst}`);
          }
        }
      }
    }),
  );
});

test('property: no request waits while its caller has a token; none waits past the bound; starts keep arrival order', () => {
  fc.assert(
    fc.property(limits, arrivals, ({ rate, burst, maxWaiting }, seq) => {
      const c = clock();
      const pacer = new Pacer({ rate, burst, maxWaiting }, c.now);
      // A reference bucket per caller: tokens, refilled with time; and the starts still ahead.
      const model = new Map<string, { tokens: number; at: number; ahead: number[] }>();
      for (const { caller, gap } of seq) {
        c.t += gap;
        const m = model.get(caller) ?? { tokens: burst, at: c.t, ahead: [] };
        m.tokens = Math.min(burst, m.tokens + ((c.t - m.at) * rate) / 1000);
        m.at = c.t;
        m.ahead = m.ahead.filter((s) => s > c.t);
        const p = pacer.take(caller);
        if (m.tokens >= 1 - 1e-9 && m.ahead.length === 0) {
          assert.deepEqual(p, { wait: 0 }, `caller ${caller} had ${m.tokens} tokens`);
        } else if ('refused' in p) {
          assert.ok(m.ahead.length >= maxWaiting, `refused with ${m.ahead.length} waiting of ${maxWaiting}`);
          assert.ok(p.retryAfterMs > 0);
          model.set(caller, m);
          continue;
        } else {
          assert.ok(m.ahead.length < maxWaiting || p.wait === 0, `${m.ahead.length} already waiting, bound ${maxWaiting}`);
          const start = c.t + p.wait;
          assert.ok(m.ahead.every((s) => s <= start + 1e-6), 'a caller’s requests start in the order they came');
          if (p.wait > 0) m.ahead.push(start);
        }
        m.tokens -= 1;
        model.set(caller, m);
      }
    }),
  );
});
