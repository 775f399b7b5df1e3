import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { ClaimProblem, githubIdentity, gitlabIdentity, isWorkflowPath, workflowPath } from '../../../src/publishing/trust/claims.js';
import { bindingMismatches } from '../../../src/publishing/trust/service.js';
import type { BindingRow } from '../../../src/publishing/trust/repository.js';
import { boundRef, refMatches, refProblem } from '../../../src/publishing/trust/refs.js';
import { githubClaims, gitlabClaims } from './issuer.js';

const ISSUER = 'https://token.actions.githubusercontent.com';
const chars = (alphabet: string, min: number, max: number) =>
  fc.array(fc.constantFrom(...alphabet), { minLength: min, maxLength: max }).map((a) => a.join(''));
const owner = chars('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-', 1, 39);
const repo = chars('abcdefghijklmnopqrstuvwxyz0123456789._-', 1, 100);
const repository = fc.tuple(owner, repo).map(([o, r]) => `${o}/${r}`);
/** Workflow file names may hold `@` and dots; GitHub only needs .yml or .yaml. */
const fileName = chars('abcdefghijklmnopqrstuvwxyz0123456789._-@ ', 1, 40);
const workflow = fc.tuple(fileName, fc.constantFrom('.yml', '.yaml')).map(([n, ext]) => `.github/workflows/${n}${ext}`);
const ref = fc.oneof(
  chars('abcdefghijklmnopqrstuvwxyz0123456789._-/@', 1, 60).map((b) => `refs/heads/${b}`),
  chars('abcdefghijklmnopqrstuvwxyz0123456789._-', 1, 30).map((t) => `refs/tags/${t}`),
  fc.integer({ min: 1, max: 1_000_000 }).map((n) => `refs/pull/${n}/merge`),
);

describe('workflow_ref parsing', () => {
  test('the workflow path comes back from <repository>/<path>@<ref> whatever the names hold', () => {
    fc.assert(
      fc.property(repository, workflow, ref, (r, w, f) => {
        assert.equal(workflowPath(`${r}/${w}@${f}`, r, f), w);
        assert.ok(isWorkflowPath(w));
      }),
      { numRuns: 500 },
    );
  });

  test('without a matching ref claim the path still ends at the first @ after .yml/.yaml', () => {
    fc.assert(
      fc.property(repository, workflow.filter((w) => !w.includes('@')), ref, ref, (r, w, f, other) => {
        assert.equal(workflowPath(`${r}/${w}@${f}`, r, other === f ? null : other), w);
      }),
      { numRuns: 300 },
    );
  });

  test("another repository's workflow (a reusable one) never parses as the token repository's", () => {
    fc.assert(
      fc.property(repository, repository, workflow, ref, (r, other, w, f) => {
        fc.pre(r.toLowerCase() !== other.toLowerCase() && !other.toLowerCase().startsWith(`${r.toLowerCase()}/`));
        assert.equal(workflowPath(`${other}/${w}@${f}`, r, f), null);
      }),
      { numRuns: 300 },
    );
  });

  test('workflow paths staff may bind: only files directly in .github/workflows', () => {
    assert.ok(isWorkflowPath('.github/workflows/release.yml'));
    assert.ok(isWorkflowPath('.github/workflows/release.yaml'));
    assert.ok(!isWorkflowPath('.github/workflows/sub/release.yml'));
    assert.ok(!isWorkflowPath('release.yml'));
    assert.ok(!isWorkflowPath('.github/workflows/release.json'));
    assert.ok(!isWorkflowPath('.github/workflows/a\nb.yml'));
  });
});

describe('claims of arbitrary ID tokens', () => {
  const json = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.string()), fc.object());
  const keys = ['repository', 'repository_id', 'repository_owner_id', 'workflow_ref', 'ref', 'run_id', 'run_attempt', 'environment', 'sha',
    'project_path', 'project_id', 'namespace_id', 'pipeline_id', 'job_id', 'ci_config_ref_uri', 'ref_type'];

  test('a claim of the wrong shape is refused naming it (never another error, never accepted as given)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...keys), json, fc.boolean(), (key, value, gitlab) => {
        const base = gitlab ? gitlabClaims('aud') : githubClaims('aud');
        const payload = { ...base, [key]: value };
        try {
          const id = gitlab ? gitlabIdentity(payload, ISSUER) : githubIdentity(payload, ISSUER);
          // Accepted: every id is a digit string and every text a bounded printable string.
          for (const v of [id.repositoryId, id.ownerId, id.runId]) assert.match(v, /^\d{1,30}$/);
          for (const v of [id.repository, id.ref, id.workflow]) assert.ok(typeof v === 'string' && v.length <= 512 && ![...v].some((c) => c.charCodeAt(0) < 0x20));
        } catch (e) {
          assert.ok(e instanceof ClaimProblem, String(e));
          assert.ok(keys.includes(e.claim), e.claim);
        }
      }),
      { numRuns: 1000 },
    );
  });

  test('GitHub ids sent as numbers are read as the same digits', () => {
    const id = githubIdentity({ ...githubClaims('aud'), repository_id: 690002541, repository_owner_id: 9919 }, ISSUER);
    assert.deepEqual([id.repositoryId, id.ownerId, id.workflow], ['690002541', '9919', '.github/workflows/release.yml']);
    assert.equal(id.runUrl, 'https://github.com/octo-org/csv-nodes/actions/runs/12233154281/attempts/1');
  });
});

describe('binding checks', () => {
  const binding: BindingRow = {
    id: 'tb_1',
    product_id: 'p',
    provider: 'github',
    repository: 'Octo-Org/CSV-Nodes',
    repository_id: '690002541',
    owner_id: '9919',
    workflow: '.github/workflows/release.yml',
    ref: null,
    environment: 'Release',
    created_at: '',
    owner_pinned_at: null,
    allow_unprotected: 0,
  };
  const identity = githubIdentity(githubClaims('aud'), ISSUER);

  test('the bound identity passes (names and GitHub environments case-insensitively)', () => {
    assert.deepEqual(bindingMismatches(binding, identity), []);
  });

  test('each claim off is named, and only that one', () => {
    const cases: [Partial<typeof identity>, string][] = [
      [{ repositoryId: '1' }, 'repository_id'],
      [{ repository: 'octo-org/other' }, 'repository'],
      [{ ownerId: '1' }, 'repository_owner_id'],
      [{ workflow: '.github/workflows/Release.yml' }, 'workflow_ref'],
      [{ environment: 'staging' }, 'environment'],
      [{ environment: null }, 'environment'],
    ];
    for (const [change, claim] of cases) {
      assert.deepEqual(bindingMismatches(binding, { ...identity, ...change }).map((p) => p.field), [claim], claim);
    }
    // No owner id bound yet (pinned at first use): any owner passes this check.
    assert.deepEqual(bindingMismatches({ ...binding, owner_id: null }, { ...identity, ownerId: '1' }), []);
  });

  test('GitLab: a bare ref is a branch, refs/tags/… a tag; environment exact', () => {
    const gl = gitlabIdentity(gitlabClaims('aud'), 'https://gitlab.com');
    const b: BindingRow = { ...binding, provider: 'gitlab', repository: 'acme/nodes/csv-nodes', repository_id: '4242', owner_id: '72', workflow: null, ref: 'refs/tags/v1.2.0', environment: 'production' };
    assert.deepEqual(bindingMismatches(b, gl), []);
    assert.deepEqual(bindingMismatches({ ...b, ref: 'refs/tags/v*' }, gl), []);
    // The token is for the tag v1.2.0: a binding of the branch of that name refuses it.
    assert.deepEqual(bindingMismatches({ ...b, ref: 'v1.2.0' }, gl).map((p) => p.field), ['ref_type']);
    assert.deepEqual(bindingMismatches({ ...b, ref: 'refs/heads/v1.2.0' }, gl).map((p) => p.field), ['ref_type']);
    assert.deepEqual(bindingMismatches({ ...b, ref: 'refs/tags/v2*' }, gl).map((p) => p.field), ['ref']);
    assert.deepEqual(bindingMismatches(b, { ...gl, refType: null }).map((p) => p.field), ['ref_type']);
    assert.deepEqual(bindingMismatches({ ...b, environment: 'Production' }, gl).map((p) => p.field), ['environment']);
    assert.deepEqual(bindingMismatches(b, { ...gl, ownerId: '73' }).map((p) => p.field), ['namespace_id']);
  });

  test('GitLab: --ref main accepts the protected branch main, never a tag named main, nor an unprotected ref unless allowed', () => {
    const b: BindingRow = { ...binding, provider: 'gitlab', repository: 'acme/nodes/csv-nodes', repository_id: '4242', owner_id: '72', workflow: null, ref: 'main', environment: null };
    const token = (refType: string, protectedRef: string | undefined) =>
      gitlabIdentity(gitlabClaims('aud', { ref: 'main', ref_type: refType, ref_path: `refs/${refType === 'tag' ? 'tags' : 'heads'}/main`, ref_protected: protectedRef }), 'https://gitlab.com');
    assert.deepEqual(bindingMismatches(b, token('branch', 'true')), []);
    assert.deepEqual(bindingMismatches({ ...b, ref: 'refs/heads/main' }, token('branch', 'true')), []);
    // The case a developer can make: push a tag "main" (tags unprotected) and run its pipeline.
    assert.deepEqual(bindingMismatches(b, token('tag', 'false')).map((p) => p.field), ['ref_type', 'ref_protected']);
    assert.deepEqual(bindingMismatches(b, token('tag', 'true')).map((p) => p.field), ['ref_type']);
    assert.deepEqual(bindingMismatches(b, token('branch', 'false')).map((p) => p.field), ['ref_protected']);
    assert.deepEqual(bindingMismatches(b, token('branch', undefined)).map((p) => p.field), ['ref_protected']);
    // Staff allowed unprotected refs: the branch passes unprotected; a tag of its name still does not.
    const allowed = { ...b, allow_unprotected: 1 };
    assert.deepEqual(bindingMismatches(allowed, token('branch', 'false')), []);
    assert.deepEqual(bindingMismatches(allowed, token('tag', 'false')).map((p) => p.field), ['ref_type']);
    // Without a bound ref, any protected ref passes and unprotected ones do not.
    assert.deepEqual(bindingMismatches({ ...b, ref: null }, token('tag', 'true')), []);
    assert.deepEqual(bindingMismatches({ ...b, ref: null }, token('tag', 'false')).map((p) => p.field), ['ref_protected']);
  });

  test('GitHub: a bound branch is refs/heads/…, never the tag of the same name', () => {
    const tagMain = githubIdentity(githubClaims('aud', { ref: 'refs/tags/main', ref_type: 'tag' }), ISSUER);
    const branchMain = githubIdentity(githubClaims('aud', { ref: 'refs/heads/main', ref_type: 'branch' }), ISSUER);
    for (const ref of ['main', 'refs/heads/main']) {
      assert.deepEqual(bindingMismatches({ ...binding, ref }, branchMain), [], ref);
      assert.deepEqual(bindingMismatches({ ...binding, ref }, tagMain).map((p) => p.field), ['ref'], ref);
    }
    assert.deepEqual(bindingMismatches({ ...binding, ref: 'refs/tags/main' }, branchMain).map((p) => p.field), ['ref']);
    assert.deepEqual(bindingMismatches({ ...binding, ref: 'refs/tags/v*' }, identity), []);
    // GitHub bindings pin the workflow file; the protected-ref rule is GitLab's.
    const unprotected = githubIdentity(githubClaims('aud', { ref_protected: 'false' }), ISSUER);
    assert.deepEqual(bindingMismatches(binding, unprotected), []);
  });
});

describe('bound refs', () => {
  const name = chars('abcdefghijklmnopqrstuvwxyz0123456789._-/*', 1, 30);
  const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
  const reference = (pattern: string, actual: string) => new RegExp(`^${pattern.split('*').map(escapeRe).join('.*')}$`, 's').test(actual);

  test('property: refMatches agrees with the wildcard read as a regular expression', () => {
    fc.assert(
      fc.property(name, name, (pattern, actual) => {
        assert.equal(refMatches(pattern, actual), reference(pattern, actual), `${pattern} ~ ${actual}`);
        // A ref always matches itself with any of its pieces widened to a wildcard.
        const plain = actual.replaceAll('*', '');
        assert.ok(refMatches(plain, plain));
      }),
      { numRuns: 3000 },
    );
    // Pieces found from a pattern's both ends may not overlap.
    assert.equal(refMatches('ab*ba', 'aba'), false);
    assert.equal(refMatches('refs/tags/v*', 'refs/tags/v1.2.0'), true);
    assert.equal(refMatches('refs/tags/v*', 'refs/heads/v1.2.0'), false);
  });

  test('property: whatever staff type, a bound ref is a branch or a tag, or refused naming why', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), name, name.map((n) => `refs/tags/${n}`), name.map((n) => `refs/${n}`)), (ref) => {
        const problem = refProblem(ref);
        if (problem !== null) return;
        const full = boundRef(ref);
        assert.ok(full.startsWith('refs/heads/') || full.startsWith('refs/tags/'), full);
        assert.equal(boundRef(full), full, 'normalising is idempotent');
        assert.ok(![...full].some((c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f), JSON.stringify(full));
      }),
      { numRuns: 2000 },
    );
    assert.equal(boundRef('main'), 'refs/heads/main');
    assert.equal(boundRef('refs/tags/v1'), 'refs/tags/v1');
    assert.notEqual(refProblem('refs/merge-requests/1/head'), null);
    assert.notEqual(refProblem('refs/tags/'), null);
    assert.notEqual(refProblem('main branch'), null);
  });
});
