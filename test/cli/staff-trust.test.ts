import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../helpers/publishing.js';
import { githubClaims, type LocalIssuer, startIssuer } from '../publishing/trust/issuer.js';

for (const target of dialects()) {
  describe(`pier staff trust on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let env: NodeJS.ProcessEnv;
    let server: RunningPublishing;
    let issuer: LocalIssuer;
    const pier = (...args: string[]) => {
      const r = spawnSync(process.execPath, ['bin/pier.js', ...args], { env, encoding: 'utf8' });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };

    before(async () => {
      db = await target.create();
      issuer = await startIssuer();
      const oidc = { PIER_BASE_URL: 'https://pier.example', PIER_OIDC_GITHUB_ISSUER: issuer.url, PIER_OIDC_GITLAB_ISSUER: issuer.url };
      env = { ...process.env, PIER_DATA_DIR: tempDir(), PIER_DATABASE_URL: db.url, ...oidc };
      server = await startPublishing(db.url, {}, oidc);
      assert.equal(pier('staff', 'register', 'csv-nodes', '--name', 'CSV Nodes').code, 0);
    });
    after(async () => {
      await server.close();
      await issuer.close();
      await db.drop();
    });

    test('add, list, show the history of an exchange, remove', async () => {
      const add = pier('staff', 'trust', 'add', 'csv-nodes', '--github', 'octo-org/csv-nodes', '--repository-id', '690002541', '--workflow', 'release.yml', '--environment', 'release', '--json');
      assert.equal(add.code, 0, add.stderr);
      const binding = JSON.parse(add.stdout);
      assert.match(binding.id, /^tb_[0-9a-f]{10}$/);
      assert.equal(binding.workflow, '.github/workflows/release.yml');
      assert.equal(binding.ownerId, null);
      const gl = pier('staff', 'trust', 'add', 'csv-nodes', '--gitlab', 'acme/nodes/csv-nodes', '--project-id', '4242', '--namespace-id', '72', '--ref', 'main');
      assert.equal(gl.code, 0, gl.stderr);
      assert.match(gl.stdout, /gitlab {2}acme\/nodes\/csv-nodes \(project 4242\) {2}namespace 72 {2}branch main {2}protected refs only {2}any environment/);
      const tag = pier('staff', 'trust', 'add', 'csv-nodes', '--gitlab', 'acme/nodes/csv-nodes', '--project-id', '4242', '--tag', 'v*', '--allow-unprotected', '--json');
      assert.equal(tag.code, 0, tag.stderr);
      assert.deepEqual([JSON.parse(tag.stdout).ref, JSON.parse(tag.stdout).allowUnprotected], ['refs/tags/v*', true]);
      assert.equal(pier('staff', 'trust', 'remove', 'csv-nodes', JSON.parse(tag.stdout).id).code, 0);
      const list = JSON.parse(pier('staff', 'trust', 'list', 'csv-nodes', '--json').stdout);
      assert.deepEqual(list.map((b: { provider: string }) => b.provider), ['github', 'gitlab']);
      assert.deepEqual([list[1].ref, list[1].allowUnprotected], ['refs/heads/main', false]);

      // A running server sees the binding on its next request.
      const res = await fetch(`${server.url}/api/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: await issuer.sign(githubClaims('https://pier.example')) }),
      });
      assert.equal(res.status, 200);
      const show = pier('staff', 'show', 'csv-nodes');
      assert.equal(show.code, 0, show.stderr);
      assert.match(show.stdout, /trusted publishing:\n {4}tb_\w+ {2}github {2}octo-org\/csv-nodes \(repository 690002541\) {2}owner 9919 \(pinned at first use\) {2}workflow \.github\/workflows\/release\.yml {2}environment release/);
      assert.match(show.stdout, /latest trusted publishes:\n {4}\S+ {2}exchange +octo-org\/csv-nodes {2}\.github\/workflows\/release\.yml {2}refs\/tags\/v1\.2\.0 {2}run 12233154281/);
      const json = JSON.parse(pier('staff', 'show', 'csv-nodes', '--json').stdout);
      assert.equal(json.trustBindings.length, 2);
      assert.equal(json.trustedPublishes[0].action, 'exchange');

      const removed = pier('staff', 'trust', 'remove', 'csv-nodes', binding.id);
      assert.equal(removed.code, 0, removed.stderr);
      assert.equal(JSON.parse(pier('staff', 'trust', 'list', 'csv-nodes', '--json').stdout).length, 1);
      const again = pier('staff', 'trust', 'remove', 'csv-nodes', binding.id);
      assert.notEqual(again.code, 0);
      assert.match(again.stderr, /no binding/);
    });

    // The options are checked before any database is opened: one dialect is enough (a skip
    // would fail CI, where every declared test must run).
    if (target.name === 'sqlite') test('incomplete or mixed options are refused naming the option', () => {
      for (const [args, pattern] of [
        [['--github', 'octo-org/csv-nodes', '--workflow', 'release.yml'], /--repository-id/],
        [['--github', 'octo-org/csv-nodes', '--repository-id', '1'], /--workflow/],
        [['--github', 'octo-org/csv-nodes', '--repository-id', '1', '--workflow', 'release.yml', '--allow-unprotected'], /--allow-unprotected is for --gitlab/],
        [['--gitlab', 'acme/x', '--project-id', '1', '--ref', 'main', '--tag', 'v1'], /one of --ref <branch> or --tag <tag>/],
        [['--gitlab', 'acme/x', '--project-id', '1', '--tag', 'refs/tags/v1'], /--tag takes a tag name/],
        [['--gitlab', 'acme/x', '--project-id', '1', '--ref', 'refs/merge-requests/1/head'], /--ref must be a branch name, refs\/heads\/<branch> or refs\/tags\/<tag>/],
        [['--gitlab', 'acme/x', '--project-id', '1', '--ref', 'main branch'], /--ref must be a branch or tag name/],
        [['--gitlab', 'acme/x', '--project-id', '1', '--workflow', 'a.yml'], /--workflow is for --github/],
        [['--github', 'a/b', '--gitlab', 'c/d'], /exactly one/],
        [['--github', 'not-a-repo', '--repository-id', '1', '--workflow', 'release.yml'], /--github must be <owner>\/<repository>/],
        [['--github', 'a/b', '--repository-id', 'twelve', '--workflow', 'release.yml'], /--repository-id must be a numeric id/],
        [['--github', 'a/b', '--repository-id', '1', '--workflow', '.github/workflows/sub/x.yml'], /--workflow must be a workflow file/],
        [['--gitlab', 'single', '--project-id', '1'], /--gitlab must be <group>\/<project>/],
      ] as const) {
        const r = pier('staff', 'trust', 'add', 'csv-nodes', ...args);
        assert.notEqual(r.code, 0, args.join(' '));
        assert.match(r.stderr, pattern, `${args.join(' ')}: ${r.stderr}`);
      }
      const missing = pier('staff', 'trust', 'add', 'nope', '--github', 'a/b', '--repository-id', '1', '--workflow', 'release.yml');
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /no product "nope"/);
    });
  });
}
