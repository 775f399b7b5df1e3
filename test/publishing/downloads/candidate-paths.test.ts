// Download paths of releases and of copies being crawled (downloads/paths.ts): `<label>@<n>/`
// names release n's own folder and nothing else; `<label>@<n>~<secret>/` names copy n's candidate
// folder, only with a well-formed secret; neither leaves its label's releases folder.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { parseDownloadPath } from '../../../src/publishing/downloads/paths.js';
import { candidateSegment, releaseKeys } from '../../../src/publishing/releases/service.js';

const label = fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/).filter((l) => l !== '.' && l !== '..');
const secret = fc.stringMatching(/^[A-Za-z0-9_-]{22}$/);
const n = fc.integer({ min: 1, max: 999_999_999 });
const rest = fc.array(fc.constantFrom('plugins', 'features', 'a.jar', '..', '%2e%2e', '%2f', 'content.jar', '.pier-tmp-1'), { maxLength: 3 });

test('a copy address names its candidate folder and nothing else; a release address only the release folder', () => {
  fc.assert(
    fc.property(label, n, secret, rest, (l, num, s, tail) => {
      const copy = parseDownloadPath(`/csv-nodes/${encodeURIComponent(candidateSegment({ label: l, number: num, secret: s }))}/${tail.join('/')}`);
      const release = parseDownloadPath(`/csv-nodes/${encodeURIComponent(`${l}@${num}`)}/${tail.join('/')}`);
      for (const [parsed, folder] of [
        [copy, releaseKeys.candidate('csv-nodes', l, num, s)],
        [release, releaseKeys.tree('csv-nodes', l, num)],
      ] as const) {
        if (!parsed.ok) continue;
        assert.ok(parsed.target.key === folder || parsed.target.key.startsWith(`${folder}/`), `${parsed.target.key} under ${folder}`);
        assert.ok(!parsed.target.key.split('/').some((x) => x === '..' || x === '.' || x.startsWith('.pier-')), parsed.target.key);
        assert.equal(parsed.target.inLabel?.label, l);
        assert.equal(parsed.target.inLabel?.release, num);
      }
      // Only the traversal and reserved segments are refused: a plain path always parses.
      if (tail.every((x) => /^[a-z.]+$/.test(x) && x !== '..' && !x.startsWith('.pier-'))) assert.ok(copy.ok && release.ok);
    }),
    { numRuns: 2000 },
  );
});

test('a copy address with a malformed secret names nothing', () => {
  fc.assert(
    fc.property(label, n, fc.string({ maxLength: 40 }), (l, num, s) => {
      fc.pre(!/^[A-Za-z0-9_-]{22}$/.test(s));
      const parsed = parseDownloadPath(`/csv-nodes/${encodeURIComponent(`${l}@${num}~${s}`)}/content.jar`);
      if (parsed.ok) assert.ok(!parsed.target.key.includes('/releases/'), parsed.target.key);
    }),
    { numRuns: 2000 },
  );
  assert.deepEqual(parseDownloadPath('/csv-nodes/5.4@1~short/content.jar'), { ok: false, status: 404, reason: 'not found' });
  const leadingZero = parseDownloadPath('/csv-nodes/5.4@01~AAAAAAAAAAAAAAAAAAAAAA/content.jar');
  assert.ok(!leadingZero.ok || !leadingZero.target.key.includes('/releases/'), 'one spelling per copy');
});
