import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SignJWT, UnsecuredJWT } from 'jose';
import { dialects } from '../../helpers/db.js';
import { patchProduct, type RunningPublishing, startPublishing } from '../../helpers/publishing.js';
import { githubClaims, gitlabClaims, type LocalIssuer, startIssuer } from './issuer.js';

const AUDIENCE = 'http://pier.test';

interface Answer {
  status: number;
  json: Record<string, unknown> & { errors?: { field: string; message: string }[] };
}

async function exchange(base: string, body: unknown): Promise<Answer> {
  const res = await fetch(`${base}/api/oidc/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Answer['json'] };
}

/** The claims a refusal names. */
const fields = (a: Answer) => (a.json.errors ?? []).map((e) => e.field);

for (const target of dialects()) {
  describe(`trusted publishing: POST /api/oidc/token on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let issuer: LocalIssuer;
    let server: RunningPublishing;
    /** The server's trusted-publishing clock runs this many ms ahead of the real one. */
    let skewMs = 0;
    let csvToken: string;

    before(async () => {
      db = await target.create();
      issuer = await startIssuer();
      // The local issuer plays both CIs (the provider then follows the claim shapes).
      server = await startPublishing(
        db.url,
        { trustClock: () => new Date(Date.now() + skewMs), failureLimits: { maxFailures: 10_000 } },
        { PIER_OIDC_GITHUB_ISSUER: issuer.url, PIER_OIDC_GITLAB_ISSUER: issuer.url },
      );
      const { products, trust } = server.service;
      csvToken = (await products.register('csv-nodes', { name: 'CSV Nodes' })).editToken;
      await products.register('gitlab-nodes', { name: 'GitLab Nodes' });
      await products.register('other-nodes', { name: 'Other Nodes' });
      // No owner id: pinned at the first exchange.
      await trust.addBinding('csv-nodes', {
        provider: 'github',
        repository: 'octo-org/csv-nodes',
        repositoryId: '690002541',
        workflow: '.github/workflows/release.yml',
        environment: 'release',
      });
      await trust.addBinding('gitlab-nodes', {
        provider: 'gitlab',
        repository: 'acme/nodes/csv-nodes',
        repositoryId: '4242',
        ownerId: '72',
        ref: 'refs/tags/v1.2.0',
        environment: 'production',
      });
    });
    after(async () => {
      await server?.close();
      await issuer?.close();
      await db?.drop();
    });

    test('GitHub: a bound workflow gets a 15-minute pier_tp_ credential that works as the edit token', async () => {
      const started = Date.now();
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE)) });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.match(String(r.json.token), /^pier_tp_[0-9A-Za-z]{49}$/);
      assert.equal(r.json.productId, 'csv-nodes');
      const ttl = Date.parse(String(r.json.expiresAt)) - started;
      assert.ok(ttl > 14.9 * 60_000 && ttl <= 15 * 60_000 + 5000, `lifetime ${ttl} ms`);
      const patched = await patchProduct(server.url, 'csv-nodes', String(r.json.token), { description: 'Published from CI' });
      assert.equal(patched.status, 200, JSON.stringify(patched.json));
      // Not a credential of another product.
      const other = await patchProduct(server.url, 'other-nodes', String(r.json.token), { description: 'x' });
      assert.equal(other.status, 401);
      // The revision names the credential, the history the CI run.
      const [revision] = await server.service.products.history('csv-nodes', 1);
      assert.match(revision!.tokenId, /^tp:[0-9a-f]{16}$/);
      const history = await server.service.trust.history('csv-nodes');
      assert.deepEqual(
        history.slice(0, 2).map((h) => [h.action, h.repository, h.workflow, h.ref, h.runId, h.credentialId]),
        [
          ['patch', 'octo-org/csv-nodes', '.github/workflows/release.yml', 'refs/tags/v1.2.0', '12233154281', revision!.tokenId.slice(3)],
          ['exchange', 'octo-org/csv-nodes', '.github/workflows/release.yml', 'refs/tags/v1.2.0', '12233154281', revision!.tokenId.slice(3)],
        ],
      );
      assert.equal(history[0]!.runUrl, `${issuer.url}/octo-org/csv-nodes/actions/runs/12233154281/attempts/1`);
      // The owner id was pinned by this first exchange.
      const [binding] = await server.service.trust.listBindings('csv-nodes');
      assert.equal(binding!.ownerId, '9919');
      assert.ok(binding!.ownerPinnedAt);
      // The edit token still works beside it.
      assert.equal((await patchProduct(server.url, 'csv-nodes', csvToken, { description: 'By hand' })).status, 200);
    });

    test('GitLab: a bound project, ref and environment get a credential', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(gitlabClaims(AUDIENCE)) });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.equal(r.json.productId, 'gitlab-nodes');
      const got = await fetch(`${server.url}/api/products/gitlab-nodes`, { headers: { authorization: `Bearer ${r.json.token}` } });
      assert.equal(got.status, 200);
      const [h] = await server.service.trust.history('gitlab-nodes', 1);
      assert.deepEqual([h!.provider, h!.repository, h!.workflow, h!.ref, h!.runId, h!.runUrl], [
        'gitlab',
        'acme/nodes/csv-nodes',
        '.gitlab-ci.yml',
        'v1.2.0',
        '1212121',
        `${issuer.url}/acme/nodes/csv-nodes/-/jobs/3434343`,
      ]);
    });

    test('wrong repository id (a repository recreated under the bound name) is refused naming repository_id', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE, { repository_id: '790002541' })) });
      assert.equal(r.status, 403);
      assert.equal(r.json.code, 'not_trusted');
      assert.deepEqual(fields(r), ['repository_id']);
      const gl = await exchange(server.url, { token: await issuer.sign(gitlabClaims(AUDIENCE, { project_id: '4243' })) });
      assert.deepEqual([gl.status, fields(gl)], [403, ['project_id']]);
    });

    test('a repository no product is bound to is refused naming repository', async () => {
      const r = await exchange(server.url, {
        token: await issuer.sign(githubClaims(AUDIENCE, { repository: 'someone/else', repository_id: '1' })),
      });
      assert.deepEqual([r.status, fields(r)], [403, ['repository']]);
    });

    test('after the owner id is pinned, another owner id is refused naming repository_owner_id', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE, { repository_owner_id: '10001' })) });
      assert.deepEqual([r.status, fields(r)], [403, ['repository_owner_id']]);
      const gl = await exchange(server.url, { token: await issuer.sign(gitlabClaims(AUDIENCE, { namespace_id: '73' })) });
      assert.deepEqual([gl.status, fields(gl)], [403, ['namespace_id']]);
    });

    test('another workflow of the repository is refused naming workflow_ref, also when it calls the bound one', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE, { workflow: '.github/workflows/ci.yml' })) });
      assert.deepEqual([r.status, fields(r)], [403, ['workflow_ref']]);
      // A reusable workflow: job_workflow_ref names the called (bound) file, workflow_ref the caller.
      const reusable = githubClaims(AUDIENCE, { workflow: '.github/workflows/pr.yml' });
      reusable.job_workflow_ref = 'octo-org/csv-nodes/.github/workflows/release.yml@refs/tags/v1.2.0';
      const r2 = await exchange(server.url, { token: await issuer.sign(reusable) });
      assert.deepEqual([r2.status, fields(r2)], [403, ['workflow_ref']]);
    });

    test('another environment, or none, is refused naming environment', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE, { environment: 'staging' })) });
      assert.deepEqual([r.status, fields(r)], [403, ['environment']]);
      const none = githubClaims(AUDIENCE);
      delete none.environment;
      const r2 = await exchange(server.url, { token: await issuer.sign(none) });
      assert.deepEqual([r2.status, fields(r2)], [403, ['environment']]);
      const gl = await exchange(server.url, { token: await issuer.sign(gitlabClaims(AUDIENCE, { ref: 'v1.3.0' })) });
      assert.deepEqual([gl.status, fields(gl)], [403, ['ref']]);
      const branch = await exchange(server.url, { token: await issuer.sign(gitlabClaims(AUDIENCE, { ref: 'v1.2.0', ref_type: 'branch' })) });
      assert.deepEqual([branch.status, fields(branch)], [403, ['ref_type']]);
    });

    test('an expired ID token is refused naming exp; one not valid yet naming nbf', async () => {
      const now = Math.floor(Date.now() / 1000);
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE, { iat: now - 900, nbf: now - 900, exp: now - 120 })) });
      assert.deepEqual([r.status, r.json.code, fields(r)], [401, 'invalid_id_token', ['exp']]);
      const early = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE, { nbf: now + 600, exp: now + 900 })) });
      assert.deepEqual([early.status, fields(early)], [401, ['nbf']]);
      // Within the allowed clock skew: accepted.
      const skewed = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE, { iat: now - 400, exp: now - 20 })) });
      assert.equal(skewed.status, 200, JSON.stringify(skewed.json));
    });

    test('another audience is refused naming aud', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims('https://pypi.org')) });
      assert.deepEqual([r.status, fields(r)], [401, ['aud']]);
      const missing = githubClaims(AUDIENCE);
      delete missing.aud;
      const r2 = await exchange(server.url, { token: await issuer.sign(missing) });
      assert.deepEqual([r2.status, fields(r2)], [401, ['aud']]);
    });

    test('another issuer is refused naming iss, also when signed with the trusted key', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE, { iss: 'https://token.actions.githubusercontent.com' })) });
      assert.deepEqual([r.status, fields(r)], [401, ['iss']]);
      const stranger = await startIssuer();
      try {
        const r2 = await exchange(server.url, { token: await stranger.sign(githubClaims(AUDIENCE)) });
        assert.deepEqual([r2.status, fields(r2)], [401, ['iss']]);
        // The stranger's key under the trusted issuer's name and kid: the signature does not verify.
        const forged = await stranger.sign(githubClaims(AUDIENCE, { iss: issuer.url }));
        const trustedKid = JSON.parse(Buffer.from((await issuer.sign({})).split('.')[0]!, 'base64url').toString()).kid;
        const [, payload, signature] = forged.split('.');
        const header = Buffer.from(JSON.stringify({ alg: 'RS256', kid: trustedKid, typ: 'JWT' })).toString('base64url');
        const r3 = await exchange(server.url, { token: `${header}.${payload}.${signature}` });
        assert.deepEqual([r3.status, fields(r3)], [401, ['signature']]);
      } finally {
        await stranger.close();
      }
    });

    test('unsigned (alg none) and HS256 tokens are refused naming alg', async () => {
      const unsigned = new UnsecuredJWT(githubClaims(AUDIENCE, { iss: issuer.url, jti: 'u1' })).setIssuedAt().setExpirationTime('5m').encode();
      const r = await exchange(server.url, { token: unsigned });
      assert.deepEqual([r.status, fields(r)], [401, ['alg']]);
      // HMAC keyed with the issuer's public JWKS, the classic algorithm-confusion forgery.
      const jwks = await (await fetch(`${issuer.url}/.well-known/jwks`)).text();
      const hs = await new SignJWT(githubClaims(AUDIENCE, { iss: issuer.url, jti: 'h1' }))
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuedAt()
        .setExpirationTime('5m')
        .sign(new TextEncoder().encode(jwks));
      const r2 = await exchange(server.url, { token: hs });
      assert.deepEqual([r2.status, fields(r2)], [401, ['alg']]);
      const garbage = await exchange(server.url, { token: 'not.a.jwt' });
      assert.deepEqual([garbage.status, fields(garbage)], [401, ['token']]);
    });

    test('an ID token is exchanged once: a replay is refused naming jti', async () => {
      const token = await issuer.sign(githubClaims(AUDIENCE));
      assert.equal((await exchange(server.url, { token })).status, 200);
      const again = await exchange(server.url, { token });
      assert.deepEqual([again.status, fields(again)], [401, ['jti']]);
      // Both at once: exactly one wins.
      const twin = await issuer.sign(githubClaims(AUDIENCE));
      const both = await Promise.all([exchange(server.url, { token: twin }), exchange(server.url, { token: twin })]);
      assert.deepEqual(both.map((b) => b.status).sort(), [200, 401]);
      const noJti = githubClaims(AUDIENCE);
      const withoutJti = await exchange(server.url, { token: await issuer.sign({ ...noJti, jti: undefined }) });
      assert.deepEqual([withoutJti.status, fields(withoutJti)], [401, ['jti']]);
    });

    test('an exchanged credential replayed after it expired is refused; a new exchange works', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE)) });
      assert.equal(r.status, 200);
      const credential = String(r.json.token);
      assert.equal((await patchProduct(server.url, 'csv-nodes', credential, { description: 'Before expiry' })).status, 200);
      skewMs = 15 * 60_000 + 1000;
      try {
        const late = await patchProduct(server.url, 'csv-nodes', credential, { description: 'After expiry' });
        assert.equal(late.status, 401);
        assert.match(String(late.json.detail), /expired/);
        const show = await fetch(`${server.url}/api/products/csv-nodes`, { headers: { authorization: `Bearer ${credential}` } });
        assert.equal(show.status, 401);
      } finally {
        skewMs = 0;
      }
      assert.equal((await server.service.products.show('csv-nodes')).fields.description, 'Before expiry');
    });

    test('key rotation at the issuer: a token with the new kid is accepted, the old kid is gone', async () => {
      const old = await issuer.sign(githubClaims(AUDIENCE));
      assert.equal((await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE)) })).status, 200);
      const reads = issuer.jwksReads();
      await issuer.rotate();
      // Past the JWKS re-read cooldown (1 s): an unknown kid reads the key set again.
      await new Promise((r) => setTimeout(r, 1100));
      const fresh = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE)) });
      assert.equal(fresh.status, 200, JSON.stringify(fresh.json));
      assert.ok(issuer.jwksReads() > reads, 'the JWKS was read again');
      const es = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE), { alg: 'ES256' }) });
      assert.equal(es.status, 200, JSON.stringify(es.json));
      await new Promise((r) => setTimeout(r, 1100));
      const stale = await exchange(server.url, { token: old });
      assert.deepEqual([stale.status, fields(stale)], [401, ['kid']]);
    });

    test('a token two products are bound to must name the product (409), then only that product', async () => {
      await server.service.trust.addBinding('other-nodes', {
        provider: 'github',
        repository: 'octo-org/csv-nodes',
        repositoryId: '690002541',
        ownerId: '9919',
        workflow: '.github/workflows/release.yml',
      });
      const token = await issuer.sign(githubClaims(AUDIENCE));
      const r = await exchange(server.url, { token });
      assert.deepEqual([r.status, r.json.code], [409, 'product_ambiguous']);
      const named = await exchange(server.url, { token, product: 'other-nodes' });
      assert.deepEqual([named.status, named.json.productId], [200, 'other-nodes']);
      const gl = await exchange(server.url, { token: await issuer.sign(gitlabClaims(AUDIENCE)), product: 'other-nodes' });
      assert.deepEqual([gl.status, fields(gl)], [403, ['project_path']]);
      // Removing the binding ends its credentials at once.
      const [, binding] = await server.service.trust.listBindings('other-nodes').then((l) => [null, l[0]!]);
      await server.service.trust.removeBinding('other-nodes', binding!.id);
      const res = await fetch(`${server.url}/api/products/other-nodes`, { headers: { authorization: `Bearer ${named.json.token}` } });
      assert.equal(res.status, 401);
    });

    test('recordRelease (for the release service) adds a release by the publisher to the history', async () => {
      const r = await exchange(server.url, { token: await issuer.sign(githubClaims(AUDIENCE)) });
      const res = await fetch(`${server.url}/api/products/csv-nodes`, { headers: { authorization: `Bearer ${r.json.token}` } });
      assert.equal(res.status, 200);
      const publisher = await server.service.trust.verify('csv-nodes', String(r.json.token));
      assert.ok(publisher);
      await server.service.trust.recordRelease('csv-nodes', publisher, { label: '5.4', release: 3 }, '203.0.113.9');
      const [h] = await server.service.trust.history('csv-nodes', 1);
      assert.deepEqual([h!.action, h!.detail, h!.runId, h!.clientAddress, h!.credentialId], ['release', { label: '5.4', release: 3 }, '12233154281', '203.0.113.9', publisher.credentialId]);
    });

    test('a malformed body is a 400 naming the field', async () => {
      const r = await exchange(server.url, { tokn: 'x' });
      assert.equal(r.status, 400);
      assert.ok(fields(r).includes('token'), JSON.stringify(r.json));
    });
  });
}

describe('trusted publishing: refused exchanges are rate limited per client address', () => {
  test('after the limit, even a good token waits (429 with Retry-After)', async () => {
    const target = dialects()[0]!;
    const db = await target.create();
    const issuer = await startIssuer();
    const server = await startPublishing(db.url, { failureLimits: { maxFailures: 3 } }, { PIER_OIDC_GITHUB_ISSUER: issuer.url, PIER_OIDC_GITLAB_ISSUER: issuer.url });
    try {
      await server.service.products.register('csv-nodes', { name: 'CSV' });
      await server.service.trust.addBinding('csv-nodes', { provider: 'github', repository: 'octo-org/csv-nodes', repositoryId: '690002541', workflow: '.github/workflows/release.yml' });
      for (let i = 0; i < 3; i++) assert.equal((await exchange(server.url, { token: await issuer.sign(githubClaims('https://elsewhere')) })).status, 401);
      const res = await fetch(`${server.url}/api/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: await issuer.sign(githubClaims(AUDIENCE)) }),
      });
      assert.equal(res.status, 429);
      assert.ok(Number(res.headers.get('retry-after')) > 0);
    } finally {
      await server.close();
      await issuer.close();
      await db.drop();
    }
  });
});
