import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { buildSite, exampleSpec } from '../../helpers/p2-fixtures.js';
import { githubClaims, gitlabClaims, type LocalIssuer, startIssuer } from '../../publishing/trust/issuer.js';
import { type PublishStack, runPier, startPublishStack, vendorEnv } from './stack.js';

/** The audience every token carries: the server's base URL (startPublishing's PIER_BASE_URL). */
const AUDIENCE = 'http://pier.test';

/**
 * GitHub Actions' side of the job: the ID-token request endpoint a runner offers a job with
 * `permissions: id-token: write` (ACTIONS_ID_TOKEN_REQUEST_URL, bearer
 * ACTIONS_ID_TOKEN_REQUEST_TOKEN, `&audience=`), answering `{ value }` signed by the local issuer.
 */
async function githubRuntime(issuer: LocalIssuer, requestToken: string, claims: (aud: string) => Record<string, unknown>) {
  const audiences: string[] = [];
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.headers.authorization !== `Bearer ${requestToken}` || url.searchParams.get('api-version') !== '2.0') {
      res.writeHead(403).end();
      return;
    }
    const aud = url.searchParams.get('audience') ?? '';
    audiences.push(aud);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count: 1, value: await issuer.sign(claims(aud)) }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/_apis/pipelines/1/runs/2/idtoken?api-version=2.0`,
    audiences,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

for (const target of dialects()) {
  describe(`pier publish with trusted publishing on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let issuer: LocalIssuer;
    let stack: PublishStack;
    let work: string;
    let site: string;
    let csvToken: string;

    before(async () => {
      db = await target.create();
      issuer = await startIssuer();
      stack = await startPublishStack(db.url, { env: { PIER_OIDC_GITHUB_ISSUER: issuer.url, PIER_OIDC_GITLAB_ISSUER: issuer.url } });
      work = tempDir('pier-publish-tp-');
      site = path.join(work, 'site');
      buildSite(site, exampleSpec('jar'));
      const { trust } = stack.web.service;
      csvToken = (await stack.register('csv-nodes')).editToken;
      await stack.register('gitlab-nodes');
      await trust.addBinding('csv-nodes', {
        provider: 'github',
        repository: 'octo-org/csv-nodes',
        repositoryId: '690002541',
        workflow: '.github/workflows/release.yml',
        environment: 'release',
      });
      await trust.addBinding('gitlab-nodes', { provider: 'gitlab', repository: 'acme/nodes/csv-nodes', repositoryId: '4242', ownerId: '72', ref: 'refs/tags/v1.2.0', environment: 'production' });
    });
    after(async () => {
      await stack.close();
      await issuer.close();
      await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    const publish = (product: string, env: NodeJS.ProcessEnv) =>
      runPier(['publish', '--server', stack.web.url, '--product', product, '--label', '5.4', '--site', site], env);

    test('GitHub Actions: the job ID token for the server audience is exchanged; the credential uploads and releases; the identity is printed, no secret', async () => {
      const runtime = await githubRuntime(issuer, 'runtime-request-token', (aud) => githubClaims(aud));
      try {
        const r = await publish('csv-nodes', vendorEnv(work, { ACTIONS_ID_TOKEN_REQUEST_URL: runtime.url, ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'runtime-request-token' }));
        assert.equal(r.code, 0, r.stderr + r.stdout);
        assert.deepEqual(runtime.audiences, [AUDIENCE], 'the audience GET /api/publishing names');
        assert.match(r.stdout, /trusted publishing: GitHub Actions repository=octo-org\/csv-nodes workflow_ref=octo-org\/csv-nodes\/\.github\/workflows\/release\.yml@refs\/tags\/v1\.2\.0 ref=refs\/tags\/v1\.2\.0 environment=release run_id=12233154281/);
        assert.match(r.stdout, /release: label 5\.4 is now release 1/);
        assert.ok(!/pier_tp_|runtime-request-token|eyJ/.test(r.stdout + r.stderr), 'neither the credential, the request token nor the ID token is printed');
        assert.equal((await stack.stored('csv-nodes', '5.4')).size, 9);
        const res = await fetch(`${stack.web.url}/api/products/csv-nodes/labels`, { headers: { authorization: `Bearer ${csvToken}` } });
        const { labels } = (await res.json()) as { labels: { label: string; releases: { releasedBy: { kind: string; repository?: string } | null }[] }[] };
        assert.equal(labels[0]?.releases[0]?.releasedBy?.kind, 'trusted-publisher');
        assert.equal(labels[0]?.releases[0]?.releasedBy?.repository, 'octo-org/csv-nodes');
      } finally {
        await runtime.close();
      }
    });

    test('GitHub Actions: a workflow the product is not bound to is refused (exit 4) naming the claim, nothing uploaded; the stored secrets are not used instead', async () => {
      const runtime = await githubRuntime(issuer, 'rt', (aud) => githubClaims(aud, { workflow: '.github/workflows/other.yml' }));
      const creds = await stack.register('unbound-ext');
      try {
        const r = await publish('csv-nodes', vendorEnv(work, { ACTIONS_ID_TOKEN_REQUEST_URL: runtime.url, ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'rt', PIER_EDIT_TOKEN: creds.editToken, PIER_SFTP_PASSWORD: creds.sftp.password }));
        assert.equal(r.code, 4, r.stderr + r.stdout);
        assert.match(r.stderr, /trusted publishing refused for GitHub Actions/);
        assert.match(r.stderr, /workflow/);
        const missing = await publish('csv-nodes', vendorEnv(work, { ACTIONS_ID_TOKEN_REQUEST_URL: runtime.url, ACTIONS_ID_TOKEN_REQUEST_TOKEN: 'wrong' }));
        assert.equal(missing.code, 4);
        assert.match(missing.stderr, /id-token: write/);
      } finally {
        await runtime.close();
      }
    });

    test('GitLab CI: the ID token the pipeline declared in PIER_ID_TOKEN is exchanged and used', async () => {
      const idToken = await issuer.sign(gitlabClaims(AUDIENCE));
      const r = await publish('gitlab-nodes', vendorEnv(work, { PIER_ID_TOKEN: idToken }));
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assert.match(r.stdout, /trusted publishing: GitLab CI project_path=acme\/nodes\/csv-nodes ref=v1\.2\.0 environment=production pipeline_id=1212121/);
      assert.ok(!r.stdout.includes(idToken) && !r.stdout.includes('pier_tp_'));
      assert.equal((await stack.stored('gitlab-nodes', '5.4')).size, 9);
      // An ID token for another audience: refused (exit 4), naming aud.
      const other = await publish('gitlab-nodes', vendorEnv(work, { PIER_ID_TOKEN: await issuer.sign(gitlabClaims('https://elsewhere.example')) }));
      assert.equal(other.code, 4, other.stderr);
      assert.match(other.stderr, /aud/);
    });
  });
}
