// The page change counter's freshness rule (web/page-changes.ts), against a model: reads that
// take their time, remote commits, this process's own writes and a clock, in any order
// (fast-check). Every answer is at least as new as every remote change committed more than
// FRESH_MS before it was asked for and every own write finished before it was asked for, and
// never more than one read is in flight.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { pageChanges } from '../../../src/publishing/web/page-changes.js';

const FRESH = 1;

type Op = { kind: 'tick'; ms: number } | { kind: 'remote' } | { kind: 'local' } | { kind: 'ask' } | { kind: 'finishRead' };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('tick' as const), ms: fc.constantFrom(0, 0.25, 0.5, 1, 2) }),
  fc.record({ kind: fc.constant('remote' as const) }),
  fc.record({ kind: fc.constant('local' as const) }),
  fc.record({ kind: fc.constant('ask' as const) }),
  fc.record({ kind: fc.constant('finishRead' as const) }),
);

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

async function run(ops: Op[], sync: boolean): Promise<void> {
  let clock = 0;
  let db = 1;
  let writes = 0;
  let lastLocal = 1;
  /** Remote commits: when, and the counter after it. */
  const remote: { at: number; seq: number }[] = [];
  /** Reads in flight: each sees the counter as it was when it began (the oldest it may see). */
  const reads: { resolve(): void }[] = [];
  let maxInFlight = 0;
  const changes = pageChanges({
    freshMs: FRESH,
    now: () => clock,
    localWrites: () => writes,
    read: () => {
      const seen = db;
      if (sync) return seen;
      return new Promise<number>((resolve) => {
        reads.push({ resolve: () => resolve(seen) });
        maxInFlight = Math.max(maxInFlight, reads.length);
      });
    },
  });
  const answers: { value: Promise<number>; due: number }[] = [];
  for (const o of ops) {
    if (o.kind === 'tick') clock += o.ms;
    else if (o.kind === 'remote') remote.push({ at: clock, seq: ++db });
    else if (o.kind === 'local') {
      lastLocal = ++db;
      writes++;
    } else if (o.kind === 'ask') {
      // Due: the counter after our last own write, and after every remote commit at least FRESH ago.
      const remoteDue = Math.max(1, ...remote.filter((r) => r.at <= clock - FRESH).map((r) => r.seq));
      answers.push({ value: Promise.resolve(changes.current()), due: Math.max(lastLocal, remoteDue) });
    } else if (o.kind === 'finishRead') {
      reads.shift()?.resolve();
      await flush();
    }
    await flush();
  }
  while (reads.length > 0) {
    reads.shift()?.resolve();
    await flush();
  }
  for (const [i, a] of answers.entries()) {
    const v = await a.value;
    assert.ok(v >= a.due, `answer ${i}: ${v} is older than ${a.due}`);
    assert.ok(v <= db);
  }
  assert.ok(maxInFlight <= 1, `${maxInFlight} reads in flight at once`);
}

describe('page change counter (model)', () => {
  it('answers are never older than the rule allows; reads that answer at once', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { maxLength: 60 }), (ops) => run(ops, true)), { numRuns: 300 });
  });

  it('answers are never older than the rule allows; reads that take time, at most one in flight', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { maxLength: 60 }), (ops) => run(ops, false)), { numRuns: 300 });
  });
});
