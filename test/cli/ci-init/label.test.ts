import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import fc from 'fast-check';
import { labelFromEnv, labelFromRef, NoLabelError } from '../../../src/cli/ci-init/label.js';
import { isLabel } from '../../../src/publishing/files/tree.js';

test('the rule: release tags and release branches → major.minor; pre-releases keep their whole version', () => {
  const cases: [string, string | null][] = [
    ['v5.3.1', '5.3'],
    ['v5.3', '5.3'],
    ['5.3.0', '5.3'],
    ['V5.3.1', '5.3'],
    ['refs/tags/v5.3.1', '5.3'],
    ['refs/heads/release/5.3', '5.3'],
    ['releases/v4.7.8', '4.7'],
    ['v05.03.1', '5.3'],
    ['v5.3.1+build.7', '5.3'],
    ['v5.3.0-rc.1', '5.3.0-rc.1'],
    ['v5.3.0-rc.1+build.7', '5.3.0-rc.1'],
    ['v5.3-beta', '5.3-beta'],
    ['main', null],
    ['refs/heads/main', null],
    ['v5', null],
    ['v', null],
    ['', null],
    ['feature/login', null],
    ['v5.3.x', null],
    ['v5.3.0-', null],
    ['v5.3.0-rc/1', null],
  ];
  for (const [ref, label] of cases) assert.equal(labelFromRef(ref), label, ref);
});

test('from the environment: PIER_LABEL wins, then GitHub, then GitLab; no version → a message naming PIER_LABEL', () => {
  assert.equal(labelFromEnv({ PIER_LABEL: 'nightly', GITHUB_REF_NAME: 'v5.3.1' }), 'nightly');
  assert.equal(labelFromEnv({ PIER_LABEL: '  ', GITHUB_REF_NAME: 'v5.3.1' }), '5.3');
  assert.equal(labelFromEnv({ CI_COMMIT_TAG: 'v4.7.2', CI_COMMIT_REF_NAME: 'v4.7.2' }), '4.7');
  assert.equal(labelFromEnv({ CI_COMMIT_REF_NAME: 'release/5.2' }), '5.2');
  assert.equal(labelFromEnv({ GITHUB_REF_NAME: 'main' }, 'v6.0.0'), '6.0');
  assert.throws(() => labelFromEnv({ GITHUB_REF_NAME: 'main' }), (e: Error) => e instanceof NoLabelError && /"main" names no version.*PIER_LABEL/.test(e.message));
  assert.throws(() => labelFromEnv({}), /set PIER_LABEL/);
  assert.throws(() => labelFromEnv({ PIER_LABEL: '../5.3' }), /not a valid label/);
});

test('pier ci label prints the label, or exits 2 with the reason', () => {
  const env = { ...process.env, PIER_LABEL: '', GITHUB_REF_NAME: 'v5.3.1', CI_COMMIT_TAG: '', CI_COMMIT_REF_NAME: '' };
  assert.equal(execFileSync(process.execPath, ['bin/pier.js', 'ci', 'label'], { env, encoding: 'utf8' }), '5.3\n');
  try {
    execFileSync(process.execPath, ['bin/pier.js', 'ci', 'label'], { env: { ...env, GITHUB_REF_NAME: 'main' }, encoding: 'utf8', stdio: 'pipe' });
    assert.fail('expected exit 2');
  } catch (e) {
    const err = e as { status: number; stderr: string };
    assert.equal(err.status, 2);
    assert.match(err.stderr, /pier ci label: "main" names no version/);
  }
});

const num = fc.integer({ min: 0, max: 99999 });
const prefix = fc.constantFrom('', 'v', 'V', 'refs/tags/v', 'refs/tags/', 'refs/heads/release/', 'release/v', 'releases/');

test('property: every release of a platform line gets that line\'s label, whatever the patch, prefix or build', () => {
  fc.assert(
    fc.property(prefix, num, num, fc.array(num, { maxLength: 3 }), fc.option(fc.stringMatching(/^[0-9A-Za-z]{1,8}$/), { nil: undefined }), (p, major, minor, rest, build) => {
      const ref = `${p}${[major, minor, ...rest].join('.')}${build ? `+${build}` : ''}`;
      assert.equal(labelFromRef(ref), `${major}.${minor}`);
    }),
  );
});

test('property: a pre-release never gets the stable label of its line (it cannot overwrite the live site)', () => {
  fc.assert(
    fc.property(prefix, num, num, num, fc.stringMatching(/^[0-9A-Za-z][0-9A-Za-z.]{0,10}$/), (p, major, minor, patch, pre) => {
      const label = labelFromRef(`${p}${major}.${minor}.${patch}-${pre}`);
      assert.notEqual(label, `${major}.${minor}`);
      assert.equal(label, `${major}.${minor}.${patch}-${pre}`);
    }),
  );
});

test('property: any ref gives a valid label or none, never throws; a label is stable under the rule', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[vV]?[0-9./+a-z-]{0,20}$/)), (ref) => {
      const label = labelFromRef(ref);
      if (label === null) return;
      assert.ok(isLabel(label), `${ref} → ${label}`);
      assert.ok(!label.includes('/'));
      // Publishing to a label named like the result gives the same label (tag v5.3 ↔ label 5.3).
      assert.equal(labelFromRef(label), label);
      assert.equal(labelFromRef(`v${label}`), label);
    }),
    { numRuns: 2000 },
  );
});
