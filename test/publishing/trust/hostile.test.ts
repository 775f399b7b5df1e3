/**
 * Trusted publishing attacked as a hostile CI job would: ID tokens signed by the trusted issuer
 * but with claims of the wrong type, headers that name other keys or URLs, and one CI's token
 * presented to the other CI's binding. Each is a 4xx problem naming a claim (never a 5xx, never
 * a credential), and no URL from a token is ever fetched. SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../../helpers/db.js';
import { type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { githubClaims, gitlabClaims, type LocalIssuer, startIssuer } from './issuer.js';

const AUDIENCE = 'http://127.0.0.1:8080';

async function exchange(base: string, body: unknown) {
  const res = await fetch(`${base}/api/oidc/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, type: res.headers.get('content-type') ?? '', json: (await res.json()) as { token?: string; errors?: { field: string }[] } };
}

for (const target of dialects()) {
  describe(`trusted publishing against hostile ID tokens (${target.name})`, () => {
    let db: { url: string; drop(): Promise<void> };
    let issuer: LocalIssuer;
    let server: RunningPublishing;
    let bait: http.Server;
    let baitHits = 0;
    let baitUrl: string;

    before(async () => {
      db = await target.create();
      issuer = await startIssuer();
      bait = http.createServer((_req, res) => {
        baitHits++;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys":[]}');
      });
      await new Promise<void>((r) => bait.listen(0, '127.0.0.1', r));
      baitUrl = `http://127.0.0.1:${(bait.address() as AddressInfo).port}`;
      server = await startPublishing(
        db.url,
        { failureLimits: { maxFailures: 10_000 } },
        { PIER_OIDC_GITHUB_ISSUER: issuer.url, PIER_OIDC_GITLAB_ISSUER: issuer.url, PIER_OIDC_AUDIENCE: AUDIENCE },
      );
      const { products, trust } = server.service;
      await products.register('csv-nodes', { name: 'CSV Nodes' });
      await products.register('gitlab-nodes', { name: 'GitLab Nodes' });
      await trust.addBinding('csv-nodes', {
        provider: 'github',
        repository: 'octo-org/csv-nodes',
        repositoryId: '690002541',
        ownerId: '9919',
        workflow: '.github/workflows/release.yml',
        environment: 'release',
      });
      await trust.addBinding('gitlab-nodes', { provider: 'gitlab', repository: 'acme/nodes/csv-nodes', repositoryId: '4242', ownerId: '72', ref: 'refs/tags/v1.2.0' });
    });
    after(async () => {
      await server?.close();
      await issuer?.close();
      await new Promise((r) => bait?.close(r));
      await db?.drop();
    });

    test('claims of the wrong type or shape are refused with a 4xx naming a claim', async () => {
      const long = 'x'.repeat(5000);
      const overs: Record<string, unknown>[] = [
        { repository_id: ['690002541'] },
        { repository_id: 690002541.5 },
        { repository_id: -690002541 },
        { repository_id: '690002541\u0000' },
        { repository_id: { toString: '690002541' } },
        { repository_owner_id: ['9919'] },
        { repository: ['octo-org/csv-nodes'] },
        { repository: 'octo-org/csv-nodes\u0000' },
        { repository: long },
        { workflow_ref: ['octo-org/csv-nodes/.github/workflows/release.yml@refs/tags/v1.2.0'] },
        { workflow_ref: 'octo-org/csv-nodes/.github/workflows/release.yml' },
        { workflow_ref: 'octo-org/csv-nodes/.github/workflows/../workflows/release.yml@refs/tags/v1.2.0' },
        { workflow_ref: `octo-org/csv-nodes/.github/workflows/release.yml@${long}` },
        { environment: ['release'] },
        { environment: 7 },
        { environment: null },
        { run_id: ['1'] },
        { run_id: long },
        { ref: { a: 1 } },
        { aud: [] },
        { aud: ['https://elsewhere.example'] },
        { aud: 7 },
        { iss: [''] },
        { iss: `${'x'}` },
        { exp: 'never' },
        { exp: 1e300 },
        { exp: 300_000_000_000 }, // year 11476: its ISO date sorts before today's
        { iat: 'now' },
        { nbf: 'later' },
        { jti: '' },
        { jti: { a: 1 } },
        { jti: 7 },
      ];
      for (const over of overs) {
        let token: string;
        try {
          token = await issuer.sign(githubClaims(AUDIENCE, over));
        } catch {
          continue; // jose itself will not sign it
        }
        const r = await exchange(server.url, { token });
        assert.ok(r.status >= 400 && r.status < 500, `${JSON.stringify(over).slice(0, 120)}: ${r.status} ${JSON.stringify(r.json)}`);
        assert.match(r.type, /^application\/problem\+json/);
        assert.equal(r.json.token, undefined);
        assert.ok((r.json.errors ?? []).length > 0, `${JSON.stringify(over).slice(0, 120)}: names a claim`);
      }
    });

    test('headers naming other keys or URLs are not followed; no URL from a token is fetched', async () => {
      const headers: Record<string, unknown>[] = [
        { jku: `${baitUrl}/jwks` },
        { x5u: `${baitUrl}/cert` },
        { kid: `${baitUrl}/jwks` },
        { kid: '../../../../etc/passwd' },
        { kid: 'x'.repeat(4000) },
        { crit: ['exp'], exp: 1 },
        { b64: false, crit: ['b64'] },
        { jwk: { kty: 'oct', k: 'c2VjcmV0' } },
      ];
      for (const header of headers) {
        const { kid, ...rest } = header as { kid?: string };
        const token = await issuer.sign(githubClaims(AUDIENCE, { jti: crypto.randomUUID() }), { header: rest, ...(kid ? { kid } : {}) }).catch(() => null);
        if (!token) continue;
        const r = await exchange(server.url, { token });
        // A token that verifies with the issuer's own key despite an ignored header may pass;
        // what matters is that nothing it names is used.
        assert.ok(r.status < 500, `${JSON.stringify(header).slice(0, 80)}: ${r.status} ${JSON.stringify(r.json)}`);
        if (kid) assert.ok(r.status >= 400 && r.status < 500, `kid ${kid.slice(0, 40)}: ${r.status}`);
      }
      // Unsigned and symmetric tokens built by hand with the trusted issuer's claims.
      const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const claims = { ...githubClaims(AUDIENCE), iss: issuer.url, iat: Math.floor(Date.now() / 1000), exp: Math.floor(Date.now() / 1000) + 300, jti: 'forged' };
      for (const alg of ['none', 'None', 'HS256', 'RS256 ', 'PS256', '']) {
        const r = await exchange(server.url, { token: `${b64({ alg, typ: 'JWT' })}.${b64(claims)}.` });
        assert.equal(r.status, 401, `${alg}: ${JSON.stringify(r.json)}`);
      }
      for (const junk of ['a.b.c', '...', 'x'.repeat(16_384), `${b64({ alg: 'RS256' })}.${'%%%'}.x`, `${b64(['RS256'])}.${b64(claims)}.x`, `${b64({ alg: 'RS256' })}.${b64([claims])}.x`]) {
        const r = await exchange(server.url, { token: junk });
        assert.ok(r.status >= 400 && r.status < 500, `${junk.slice(0, 40)}: ${r.status}`);
      }
      assert.equal(baitHits, 0, 'no URL named by a token was fetched');
    });

    test("a product's credential is refused on another product's release routes", async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE)) });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      for (const [method, url] of [
        ['POST', '/api/products/gitlab-nodes/labels/5.4/release'],
        ['POST', '/api/products/gitlab-nodes/labels/5.4/rollback'],
        ['GET', '/api/products/gitlab-nodes/labels'],
      ] as const) {
        const res = await fetch(`${server.url}${url}`, {
          method,
          headers: { authorization: `Bearer ${r.json.token}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
          ...(method === 'POST' ? { body: '{}' } : {}),
        });
        assert.equal(res.status, 401, `${method} ${url}`);
      }
      // Its own product's routes take it.
      const own = await fetch(`${server.url}/api/products/csv-nodes/labels`, { headers: { authorization: `Bearer ${r.json.token}` } });
      assert.equal(own.status, 200);
    });

    test("one CI's token never matches the other CI's binding, even with the same ids and path", async () => {
      // A GitLab project whose path and id equal the GitHub binding's repository and id.
      const gitlab = await issuer.sign(gitlabClaims(AUDIENCE, { project_path: 'octo-org/csv-nodes', project_id: '690002541', namespace_id: '9919' }));
      const r = await exchange(server.url, { token: gitlab, product: 'csv-nodes' });
      assert.ok(r.status === 403 || r.status === 404, JSON.stringify(r.json));
      assert.equal(r.json.token, undefined);
      // GitHub claims with GitLab's numbers, sent to the GitLab binding.
      const github = await issuer.sign(githubClaims(AUDIENCE, { repository: 'acme/nodes/csv-nodes', repository_id: '4242', repository_owner_id: '72', ref: 'v1.2.0' }));
      const g = await exchange(server.url, { token: github, product: 'gitlab-nodes' });
      assert.ok(g.status >= 400 && g.status < 500, JSON.stringify(g.json));
      assert.equal(g.json.token, undefined);
    });
  });
}
