import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { FIELD_NAMES } from '../../../src/publishing/model/fields.js';
import { dialects } from '../../helpers/db.js';
import { patchProduct, startPublishing } from '../../helpers/publishing.js';

const fieldValue = fc.oneof(
  fc.jsonValue(),
  fc.string(),
  fc.constantFrom('', '#abc', '#12345g', 'https://x.example/a.png', 'javascript:alert(1)', '<svg/>', '# T\n## [1] - 2024-02-30'),
  fc.record({ color1: fc.string(), badgeColor: fc.constantFrom('', '#fff'), backgroundImageUrl: fc.string() }, { requiredKeys: [] }),
  fc.record({ name: fc.string(), email: fc.oneof(fc.string(), fc.emailAddress()) }, { requiredKeys: [] }),
);

/** Bodies that look like product patches (known and unknown keys), plus arbitrary JSON. */
const body = fc.oneof(
  fc.dictionary(fc.oneof(fc.constantFrom(...FIELD_NAMES), fc.string({ maxLength: 12 })), fieldValue, { maxKeys: 5 }).map((o) => JSON.stringify(o)),
  fc.json({ maxDepth: 3 }),
  fc.string({ maxLength: 200 }),
);

for (const target of dialects()) {
  describe(`PATCH fuzzing on ${target.name}`, () => {
    test('random bodies never get a 5xx, and a 4xx never changes stored data', async () => {
      const db = await target.create();
      const pier = await startPublishing(db.url, { failureLimits: { maxFailures: 100_000 } });
      try {
        const { editToken } = await pier.service.products.register('fuzz-me', { name: 'Fuzz' });
        const read = async () =>
          (await fetch(`${pier.url}/api/products/fuzz-me`, { headers: { authorization: `Bearer ${editToken}` } })).text();
        await fc.assert(
          fc.asyncProperty(body, async (raw) => {
            const before = await read();
            const res = await patchProduct(pier.url, 'fuzz-me', editToken, null, { raw });
            assert.ok(res.status < 500, `5xx for ${raw}: ${JSON.stringify(res.json)}`);
            assert.ok(res.status === 200 || (res.status >= 400 && res.status < 500), `status ${res.status}`);
            if (res.status !== 200) {
              assert.equal(res.json.status, res.status);
              assert.equal(typeof res.json.code, 'string');
              assert.equal(await read(), before, `stored data changed after ${res.status} for ${raw}`);
            }
          }),
          { numRuns: 250 },
        );
      } finally {
        await pier.close();
        await db.drop();
      }
    });
  });
}
