import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { checkRedirectUri } from '../../src/runner/oauth/client-metadata.js';
import { OAuthError } from '../../src/runner/oauth/errors.js';
import { OAuthClientsRepository } from '../../src/runner/oauth/repository.js';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { dialects } from '../helpers/db.js';
import { bearer, startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';

const RUNNER_URL = 'http://runner.test';
const PRM = `${RUNNER_URL}/.well-known/oauth-protected-resource`;

describe('OAuth discovery (RFC 8414, RFC 9728)', () => {
  let r: TestRunner;
  before(async () => {
    r = await startRunner({ registrationLimits: { perAddress: 3, windowMs: 3_600_000 } });
  });
  after(() => r.close());

  test('authorization server metadata: issuer is RUNNER_URL exactly, even under a forged Host', async () => {
    for (const headers of [{}, { host: 'evil.example', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' }]) {
      const res = await r.service.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server', headers });
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['access-control-allow-origin'], '*');
      const m = res.json();
      assert.equal(m.issuer, RUNNER_URL);
      assert.equal(m.authorization_endpoint, `${RUNNER_URL}/oauth/authorize`);
      assert.equal(m.token_endpoint, `${RUNNER_URL}/oauth/token`);
      assert.equal(m.registration_endpoint, `${RUNNER_URL}/oauth/register`);
      assert.equal(m.revocation_endpoint, `${RUNNER_URL}/oauth/revoke`);
      assert.deepEqual(m.response_types_supported, ['code']);
      assert.deepEqual(m.grant_types_supported, ['authorization_code', 'refresh_token']);
      assert.deepEqual(m.code_challenge_methods_supported, ['S256']);
      assert.ok(m.token_endpoint_auth_methods_supported.includes('none'));
      assert.ok(m.revocation_endpoint_auth_methods_supported.includes('none'));
      assert.deepEqual(m.scopes_supported, ['read', 'write']);
      assert.equal(m.authorization_response_iss_parameter_supported, true);
      assert.equal(m.service_documentation, `${RUNNER_URL}/api/docs`);
      assert.ok(!res.body.includes('evil.example'));
    }
  });

  test('protected resource metadata names this server and its scopes', async () => {
    const res = await r.service.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource', headers: { host: 'evil.example' } });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['access-control-allow-origin'], '*');
    const m = res.json();
    assert.equal(m.resource, RUNNER_URL);
    assert.deepEqual(m.authorization_servers, [RUNNER_URL]);
    assert.deepEqual(m.scopes_supported, ['read', 'write']);
    assert.deepEqual(m.bearer_methods_supported, ['header']);
  });

  test('a 401 on the API points at the protected resource metadata', async () => {
    for (const headers of [{}, bearer('not-a-jwt'), { authorization: 'ApiKey rnr_oat_wrong' }]) {
      const res = await r.service.app.inject({ method: 'GET', url: '/api/me', headers });
      assert.equal(res.statusCode, 401);
      assert.match(String(res.headers['www-authenticate']), new RegExp(`^Bearer realm="runner", resource_metadata="${PRM}", ApiKey realm="runner"$`));
    }
  });

  test('a token with too little scope gets 403 insufficient_scope naming the scope (RFC 6750 §3.1)', async () => {
    const app = r.service.app;
    const setup = await app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'a long enough password' } });
    const session = setup.json().session.token as string;
    const pat = await app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 'ci', scope: 'read' } });
    assert.equal(pat.statusCode, 201, pat.body);
    const res = await app.inject({ method: 'POST', url: '/api/projects', headers: { authorization: `ApiKey ${pat.json().token}` }, payload: { name: 'p' } });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().code, 'insufficient_scope');
    assert.equal(res.headers['www-authenticate'], `Bearer realm="runner", error="insufficient_scope", scope="write", resource_metadata="${PRM}"`);
    const admin = await app.inject({ method: 'GET', url: '/api/users', headers: { authorization: `ApiKey ${pat.json().token}` } });
    assert.equal(admin.statusCode, 403);
    assert.equal(admin.json().code, 'forbidden', 'routes no token may use are not a scope problem');
  });

  test('CORS preflight on the token, registration and revocation endpoints, without credentials', async () => {
    for (const url of ['/oauth/token', '/oauth/register', '/oauth/revoke', '/.well-known/oauth-authorization-server']) {
      const res = await r.service.app.inject({
        method: 'OPTIONS',
        url,
        headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
      assert.equal(res.statusCode, 204, url);
      assert.equal(res.headers['access-control-allow-origin'], '*');
      assert.equal(res.headers['access-control-allow-credentials'], undefined);
      assert.match(String(res.headers['access-control-allow-headers']), /content-type/);
    }
    const api = await r.service.app.inject({ method: 'GET', url: '/api/version', headers: { origin: 'https://app.example' } });
    assert.equal(api.headers['access-control-allow-origin'], undefined, 'the API itself is not opened');
  });
});

describe('dynamic client registration (RFC 7591)', () => {
  let r: TestRunner;
  before(async () => {
    r = await startRunner({ registrationLimits: { perAddress: 4, windowMs: 3_600_000 } });
  });
  after(() => r.close());
  let address = 0;
  const register = (payload: unknown, remoteAddress = `10.9.0.${++address}`) =>
    r.service.app.inject({ method: 'POST', url: '/oauth/register', payload: payload as object, remoteAddress });

  test('a public client gets a client_id and no secret; unknown metadata is ignored', async () => {
    const res = await register({
      client_name: 'Claude\u0007\u202e\u0085 Desktop\u2066',
      redirect_uris: ['http://127.0.0.1:33418/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      software_statement_extra: { anything: true },
    });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['access-control-allow-origin'], '*');
    const c = res.json();
    assert.match(c.client_id, /^rnr_cid_[0-9a-f]{32}$/);
    assert.equal(c.client_secret, undefined);
    assert.equal(c.client_name, 'Claude Desktop');
    assert.deepEqual(c.redirect_uris, ['http://127.0.0.1:33418/callback']);
    assert.equal(c.token_endpoint_auth_method, 'none');
    assert.equal(c.scope, 'read write');
    assert.equal(c.software_statement_extra, undefined);
  });

  test('a confidential client gets a secret once, stored only hashed', async () => {
    const res = await register({ redirect_uris: ['https://app.example/cb'], scope: 'read' });
    assert.equal(res.statusCode, 201, res.body);
    const c = res.json();
    assert.equal(c.token_endpoint_auth_method, 'client_secret_basic', 'the RFC 7591 §2 default');
    assert.match(c.client_secret, /^rnr_ocs_/);
    assert.equal(c.client_secret_expires_at, 0);
    assert.equal(c.scope, 'read');
    const database = await openRunnerDatabase(r.config.runner.databaseUrl);
    try {
      const row = await new OAuthClientsRepository(database.db).findById(c.client_id);
      assert.ok(row?.secret_hash && row.secret_hash.length === 64);
      assert.ok(!JSON.stringify(row).includes(c.client_secret));
    } finally {
      await database.close();
    }
  });

  test('redirect URI rules: https or loopback http, absolute, no fragment', async () => {
    for (const uri of [
      'http://app.example/cb',
      'https://app.example/cb#frag',
      '/relative',
      'javascript:alert(1)',
      'com.example.app:/cb',
      'https://user:pw@app.example/cb',
      'http://127.0.0.1.evil.example/cb',
    ]) {
      const res = await register({ redirect_uris: [uri], token_endpoint_auth_method: 'none' });
      assert.equal(res.statusCode, 400, uri);
      assert.equal(res.json().error, 'invalid_redirect_uri', uri);
      assert.equal(typeof res.json().error_description, 'string');
    }
    for (const uri of ['http://localhost:8765/cb', 'http://[::1]:9000/cb', 'https://app.example/cb?x=1']) {
      assert.equal((await register({ redirect_uris: [uri], token_endpoint_auth_method: 'none' })).statusCode, 201, uri);
    }
  });

  test('unsupported metadata values are refused with invalid_client_metadata', async () => {
    const ok = { redirect_uris: ['https://app.example/cb'] };
    for (const bad of [
      { ...ok, token_endpoint_auth_method: 'private_key_jwt' },
      { ...ok, grant_types: ['implicit'] },
      { ...ok, grant_types: ['client_credentials', 'authorization_code'] },
      { ...ok, response_types: ['token'] },
      { ...ok, scope: 'admin' },
      { ...ok, client_name: 42 },
    ]) {
      const res = await register(bad);
      assert.equal(res.statusCode, 400, JSON.stringify(bad));
      assert.equal(res.json().error, 'invalid_client_metadata', JSON.stringify(bad));
    }
    assert.equal((await register({})).json().error, 'invalid_redirect_uri');
    assert.equal((await register([1])).statusCode, 400);
  });

  test('registration is rate limited per address', async () => {
    const body = { redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'none' };
    for (let i = 0; i < 4; i++) assert.equal((await register(body, '10.8.8.8')).statusCode, 201);
    const limited = await register(body, '10.8.8.8');
    assert.equal(limited.statusCode, 429);
    assert.ok(Number(limited.headers['retry-after']) > 0);
    assert.equal((await register(body, '10.8.8.9')).statusCode, 201, 'other addresses are not affected');
  });
});

describe('OAuth client repository', () => {
  for (const target of dialects()) {
    test(`stores and finds a client (${target.name})`, async () => {
      const { url, drop } = await target.create();
      const database = await openRunnerDatabase(url);
      try {
        const repo = new OAuthClientsRepository(database.db);
        const row = {
          id: 'rnr_cid_1', secret_hash: null, name: 'App', redirect_uris: '["https://a.example/cb"]',
          token_endpoint_auth_method: 'none' as const, grant_types: '["authorization_code"]', scope: 'read', client_uri: null,
          created_at: '2030-01-01T00:00:00.000Z',
        };
        await repo.insert(row);
        assert.deepEqual(await repo.findById('rnr_cid_1'), row);
        assert.equal(await repo.findById('nope'), undefined);
      } finally {
        await database.close();
        await drop();
      }
    });
  }
});

test('property: an accepted redirect URI is https or loopback http, and has no fragment', () => {
  fc.assert(
    fc.property(fc.oneof(fc.webUrl({ withFragments: true, withQueryParameters: true }), fc.string()), (uri) => {
      let accepted: string;
      try {
        accepted = checkRedirectUri(uri);
      } catch (e) {
        assert.ok(e instanceof OAuthError && e.error === 'invalid_redirect_uri');
        return;
      }
      const u = new URL(accepted);
      assert.ok(!accepted.includes('#'));
      assert.ok(u.protocol === 'https:' || (u.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname)));
    }),
    { numRuns: 500 },
  );
});
