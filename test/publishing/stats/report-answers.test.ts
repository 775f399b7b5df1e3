// Stats reports are kept briefly, shared while built, built one at a time per product and kept
// within a byte budget (stats/report-answers.ts), so a vendor's loop of full-range reports costs
// the serving loop a lookup, not a build.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ValidationError } from '../../../src/infra/errors.js';
import { parseDay } from '../../../src/publishing/stats/days.js';
import { ENTRY_OVERHEAD, reportAnswers } from '../../../src/publishing/stats/report-answers.js';
import type { ReportRequest } from '../../../src/publishing/stats/service.js';

const TODAY = parseDay('2026-11-27') as number;

/** A builder whose builds finish when the test says, recording what it was asked. */
function controlledBuilder() {
  const asked: { productId: string; request: ReportRequest; finish(json?: string): void }[] = [];
  const build = (productId: string, request: ReportRequest) =>
    new Promise<string>((resolve) => asked.push({ productId, request, finish: (json) => resolve(json ?? JSON.stringify({ productId, ...request })) }));
  return { build, asked };
}

const tick = () => new Promise((r) => setImmediate(r));

test('a repeat within freshMs is answered from memory; after it, built again', async () => {
  let now = 0;
  const builds: string[] = [];
  const answers = reportAnswers({
    today: () => TODAY,
    freshMs: 2000,
    clock: () => now,
    build: async (id, r) => {
      builds.push(`${id} ${r.from}..${r.to}`);
      return `{"n":${builds.length}}`;
    },
  });
  assert.equal(await answers.answer('p', {}), '{"n":1}');
  now = 1999;
  assert.equal(await answers.answer('p', {}), '{"n":1}');
  // The defaults resolve to the same range as the explicit one: the same report.
  assert.equal(await answers.answer('p', { from: '2026-08-30', to: '2026-11-27' }), '{"n":1}');
  assert.deepEqual(builds, ['p 2026-08-30..2026-11-27']);
  now = 2000;
  assert.equal(await answers.answer('p', {}), '{"n":2}');
  // Another product, another top or label: other reports.
  await answers.answer('q', {});
  await answers.answer('p', { top: 3 });
  await answers.answer('p', { label: '5.4' });
  assert.equal(answers.built, 5);
});

test('a bad query is a ValidationError naming the field, and nothing is built', async () => {
  let built = 0;
  const answers = reportAnswers({ today: () => TODAY, build: async () => `${++built}` });
  await assert.rejects(answers.answer('p', { from: '2026-02-30' }), (e: unknown) => e instanceof ValidationError && JSON.stringify(e).includes('from'));
  await assert.rejects(answers.answer('p', { top: 11 }), ValidationError);
  assert.equal(built, 0);
});

test('asked while it is built, a report is shared; a product builds one report at a time', async () => {
  const { build, asked } = controlledBuilder();
  const answers = reportAnswers({ today: () => TODAY, build, clock: () => 0 });
  const a1 = answers.answer('p', { top: 1 });
  const a2 = answers.answer('p', { top: 1 });
  const b = answers.answer('p', { top: 2 });
  const other = answers.answer('q', { top: 2 });
  await tick();
  // p's second report waits for its first; q builds beside them.
  assert.deepEqual(
    asked.map((x) => [x.productId, x.request.top]),
    [
      ['p', 1],
      ['q', 2],
    ],
  );
  asked[0]!.finish();
  assert.equal(await a1, await a2);
  await tick();
  // The one asked twice was built once.
  assert.deepEqual(
    asked.map((x) => [x.productId, x.request.top]),
    [
      ['p', 1],
      ['q', 2],
      ['p', 2],
    ],
  );
  asked[2]!.finish();
  asked[1]!.finish();
  assert.deepEqual(JSON.parse(await b).top, 2);
  assert.deepEqual(JSON.parse(await other).productId, 'q');
  assert.equal(answers.built, 3);
});

test('a failed build is not kept, and the product builds its next report', async () => {
  let fail = true;
  const answers = reportAnswers({
    today: () => TODAY,
    clock: () => 0,
    build: async () => {
      if (fail) throw new Error('worker gone');
      return '{}';
    },
  });
  await assert.rejects(answers.answer('p', {}), /worker gone/);
  fail = false;
  assert.equal(await answers.answer('p', {}), '{}');
});

test('property: what is kept never exceeds the byte budget, and the newest answer that fits it is kept', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 1500 })), { minLength: 1, maxLength: 40 }), async (asks) => {
      const maxBytes = 1000;
      let size = 0;
      const answers = reportAnswers({ today: () => TODAY, clock: () => 0, maxBytes, build: async () => 'x'.repeat(size) });
      for (const [top, bytes] of asks) {
        size = bytes;
        const built = answers.built;
        const json = await answers.answer('p', { top });
        assert.ok(answers.keptBytes <= maxBytes, `${answers.keptBytes} kept`);
        if (answers.built === built) continue;
        // Just built: asked again, it is answered from memory when it fits the budget.
        assert.equal(await answers.answer('p', { top }), json);
        const cost = json.length + JSON.stringify(['p', '2026-08-30', '2026-11-27', top, null]).length + ENTRY_OVERHEAD;
        assert.equal(answers.built, cost <= maxBytes ? built + 1 : built + 2);
      }
    }),
  );
});
