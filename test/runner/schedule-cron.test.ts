import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ValidationError } from '../../src/infra/errors.js';
import { canonicalTimeZone, checkCronSpec, nextFireTimes } from '../../src/runner/schedules/cron.js';

const NOW = new Date('2026-01-15T12:00:00Z');

function fieldOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof ValidationError, String(e));
    return e.errors[0]?.field;
  }
  return undefined;
}

const iso = (d: Date[]) => d.map((x) => x.toISOString());

describe('cron expressions and time zones', () => {
  test('accepted shapes: 5 fields, 6 with a fixed second, nicknames, croner extensions', () => {
    for (const cron of ['* * * * *', '30 2 * * *', '*/15 9-17 * * MON-FRI', '0 0 L * *', '0 0 * * 1#2', '15 0 * * * *', '@daily', '@HOURLY', ' 0 12 * * * ']) {
      assert.equal(fieldOf(() => checkCronSpec({ cron, timeZone: 'UTC' }, NOW)), undefined, cron);
    }
    assert.equal(checkCronSpec({ cron: ' 0 12 * * * ', timeZone: 'UTC' }, NOW).cron, '0 12 * * *');
  });

  test('refused shapes name the field cron', () => {
    for (const cron of ['', '   ', 'x', '* * * *', '* * * * * * *', '61 * * * *', '* 25 * * *', '* * * * * *', '*/10 * * * * *', '0,30 * * * * *', '0 0 30 2 *', '@often']) {
      assert.equal(fieldOf(() => checkCronSpec({ cron, timeZone: 'UTC' }, NOW)), 'cron', JSON.stringify(cron));
    }
  });

  test('time zones: IANA names in canonical spelling; anything else names the field timeZone', () => {
    assert.equal(canonicalTimeZone('Europe/Berlin'), 'Europe/Berlin');
    assert.equal(canonicalTimeZone('utc'), 'UTC');
    assert.equal(canonicalTimeZone('europe/berlin'), 'Europe/Berlin');
    assert.equal(canonicalTimeZone('Asia/Kolkata'), 'Asia/Kolkata');
    assert.equal(canonicalTimeZone('America/Argentina/Buenos_Aires'), 'America/Argentina/Buenos_Aires');
    for (const tz of ['', 'Nope/Zone', '+01:00', 'local', 'Europe/Berlin ', '../etc/passwd', 'x'.repeat(70), 'Europe/Berlin\u0000']) {
      assert.equal(fieldOf(() => checkCronSpec({ cron: '* * * * *', timeZone: tz }, NOW)), 'timeZone', JSON.stringify(tz));
    }
  });

  test('a bad expression and a bad zone are both named in one answer', () => {
    assert.throws(
      () => checkCronSpec({ cron: '61 * * * *', timeZone: 'Mars/Base' }, NOW),
      (e: unknown) => e instanceof ValidationError && e.errors.map((x) => x.field).join() === 'timeZone,cron',
    );
  });

  test('day-of-month and month combinations that never occur are refused naming cron, however many months are listed', () => {
    for (const cron of ['0 0 31 2,4 *', '0 0 31 2,4,6 *', '0 0 31 2,4,6,9,11 *', '0 0 31 4,6,9,11 *', '0 0 30,31 2 *', '0 0 31 2-4/2,6,9,11 *', '0 0 0 31 2,4,6,9,11 *']) {
      assert.throws(
        () => checkCronSpec({ cron, timeZone: 'Europe/Berlin' }, NOW),
        (e: unknown) => e instanceof ValidationError && e.errors[0]?.field === 'cron' && /never fires/.test(e.errors[0].message),
        cron,
      );
    }
    // The OR of day-of-month and weekday (standard cron), the last day and 29 February still fire.
    for (const cron of ['0 0 31 2,4,6,9,11 MON', '0 0 L 2,4 *', '0 0 29 2 *', '0 0 31 1,2 *', '0 0 * 2 1#5']) {
      assert.equal(fieldOf(() => checkCronSpec({ cron, timeZone: 'UTC' }, NOW)), undefined, cron);
    }
  });

  test('property: day, month and weekday lists, ranges and steps are accepted and fire, or refused naming cron (never another error)', () => {
    // Biased towards the days and months that rarely meet (29-31, the short months).
    const list = (min: number, max: number, likely: number[] = []) =>
      fc.oneof(
        fc.constant('*'),
        fc.uniqueArray(fc.oneof(fc.integer({ min, max }), { arbitrary: fc.constantFrom(...likely, min), weight: 3 }), { minLength: 1, maxLength: 6 }).map((xs) => xs.join(',')),
        fc.tuple(fc.integer({ min, max }), fc.integer({ min, max }), fc.integer({ min: 1, max: 12 })).map(([a, b, s]) => `${Math.min(a, b)}-${Math.max(a, b)}/${s}`),
      );
    const day = fc.oneof(list(1, 31, [29, 30, 31]), fc.constantFrom('L', '?'), fc.integer({ min: 0, max: 40 }).map(String));
    const weekday = fc.oneof(list(0, 7), fc.constantFrom('MON', '1#5', '5L', '?'));
    const tz = fc.constantFrom('UTC', 'Europe/Berlin', 'Pacific/Chatham', 'America/St_Johns');
    fc.assert(
      fc.property(day, list(1, 12, [2, 4, 6, 9, 11]), weekday, tz, (d, m, w, z) => {
        const cron = `0 0 ${d} ${m} ${w}`;
        let spec: { cron: string; timeZone: string };
        try {
          spec = checkCronSpec({ cron, timeZone: z }, NOW);
        } catch (e) {
          assert.ok(e instanceof ValidationError, `${cron} ${z}: ${String(e)}`);
          assert.equal(e.errors[0]!.field, 'cron');
          return;
        }
        const times = nextFireTimes(spec, NOW, 5);
        assert.ok(times.length >= 1 && times[0]!.getTime() > NOW.getTime(), cron);
      }),
      { numRuns: 400 },
    );
  });

  test('property: any string is either accepted (and then fires in the future) or refused naming cron or timeZone', () => {
    const part = fc.oneof(fc.constantFrom('*', '*/5', '0', '59', '1-5', 'MON', 'L', '?', '1#2', '60', '-1', ','), fc.string({ maxLength: 4 }));
    const cron = fc.oneof(fc.string({ maxLength: 30 }), fc.array(part, { minLength: 0, maxLength: 8 }).map((p) => p.join(' ')));
    const tz = fc.oneof(fc.constantFrom('UTC', 'Europe/Berlin', 'Asia/Kolkata', 'Pacific/Chatham'), fc.string({ maxLength: 20 }));
    fc.assert(
      fc.property(cron, tz, (c, z) => {
        let spec: { cron: string; timeZone: string };
        try {
          spec = checkCronSpec({ cron: c, timeZone: z }, NOW);
        } catch (e) {
          assert.ok(e instanceof ValidationError, `${JSON.stringify(c)} ${JSON.stringify(z)}: ${String(e)}`);
          assert.ok(['cron', 'timeZone'].includes(e.errors[0]!.field));
          return;
        }
        const times = nextFireTimes(spec, NOW, 5);
        assert.ok(times.length >= 1);
        for (let i = 0; i < times.length; i++) {
          assert.ok(times[i]!.getTime() > NOW.getTime());
          // At most once a minute: the seconds field is fixed.
          if (i > 0) assert.ok(times[i]!.getTime() - times[i - 1]!.getTime() >= 60_000, `${c}: ${iso(times)}`);
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe('daylight saving time (croner), Europe/Berlin, `30 2 * * *`', () => {
  const spec = { cron: '30 2 * * *', timeZone: 'Europe/Berlin' };

  test('spring forward (29 March 2026: 02:00 CET → 03:00 CEST): the missing 02:30 fires once, at 03:30 CEST', () => {
    assert.deepEqual(iso(nextFireTimes(spec, new Date('2026-03-27T12:00:00Z'), 4)), [
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:30:00.000Z', // 03:30 CEST: 02:30 does not exist that day
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  test('fall back (25 October 2026: 03:00 CEST → 02:00 CET): the doubled 02:30 fires once, at its second occurrence (CET)', () => {
    assert.deepEqual(iso(nextFireTimes(spec, new Date('2026-10-23T12:00:00Z'), 4)), [
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T01:30:00.000Z', // 02:30 CET; 00:30Z (02:30 CEST) that day is not a fire
      '2026-10-26T01:30:00.000Z', // 02:30 CET
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  test('fall back, every 30 minutes: croner skips the first pass through the repeated hour', () => {
    assert.deepEqual(iso(nextFireTimes({ cron: '*/30 * * * *', timeZone: 'Europe/Berlin' }, new Date('2026-10-24T23:00:00Z'), 4)), [
      '2026-10-24T23:30:00.000Z', // 01:30 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET (02:00 and 02:30 CEST are passed over)
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
  });
});
