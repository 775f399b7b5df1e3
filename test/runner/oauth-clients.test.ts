import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  discoverOAuthServerInfo,
  exchangeAuthorization,
  extractResourceMetadataUrl,
  refreshAuthorization,
  registerClient,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import * as oauth from 'oauth4webapi';
import { startRunner, type TestRunner, SETUP_TOKEN } from './helpers.js';
import { Browser, consent, PASSWORD } from './oauth-helpers.js';

/**
 * Independent OAuth clients against the real server. The runner's public URL stays
 * http://runner.test (what the metadata must name); `fetch` is pointed at the listening port.
 */
describe('OAuth discovery and registration with real client libraries', () => {
  let r: TestRunner;
  let origin: string;
  const RUNNER_URL = 'http://runner.test';
  const reroute = (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input);
    assert.equal(url.origin, RUNNER_URL, 'clients only talk to the discovered server');
    return fetch(origin + url.pathname + url.search, input instanceof Request ? input : init);
  };

  const EMAIL = 'owner@example.com';
  before(async () => {
    r = await startRunner();
    await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    origin = `http://127.0.0.1:${(r.service.app.server.address() as AddressInfo).port}`;
    const setup = await reroute(`${RUNNER_URL}/api/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ setupToken: SETUP_TOKEN, email: EMAIL, password: PASSWORD }),
    });
    assert.equal(setup.status, 201);
  });
  const me = (authorization: string) => reroute(`${RUNNER_URL}/api/me`, { headers: { authorization } });
  after(() => r.close());

  test('oauth4webapi (strict): discovery with algorithm oauth2 and registration', async () => {
    const issuer = new URL(RUNNER_URL);
    const options = { algorithm: 'oauth2' as const, [oauth.customFetch]: reroute, [oauth.allowInsecureRequests]: true };
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, options));
    assert.equal(as.issuer, RUNNER_URL);
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);
    assert.equal(as.authorization_response_iss_parameter_supported, true);
    const client = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        { redirect_uris: ['http://127.0.0.1:7777/cb'], token_endpoint_auth_method: 'none', client_name: 'oauth4webapi test' },
        { [oauth.customFetch]: reroute, [oauth.allowInsecureRequests]: true },
      ),
    );
    assert.match(client.client_id, /^rnr_cid_/);
    assert.equal(client.token_endpoint_auth_method, 'none');
  });

  test('MCP SDK: a 401 leads to the protected resource metadata, the server and a registration', async () => {
    const denied = await reroute(`${RUNNER_URL}/api/me`);
    assert.equal(denied.status, 401);
    const resourceMetadataUrl = extractResourceMetadataUrl(denied);
    assert.equal(resourceMetadataUrl?.href, `${RUNNER_URL}/.well-known/oauth-protected-resource`);
    const info = await discoverOAuthServerInfo(`${RUNNER_URL}/api/me`, { resourceMetadataUrl, fetchFn: reroute });
    assert.equal(String(info.authorizationServerUrl).replace(/\/$/, ''), RUNNER_URL);
    assert.equal(info.authorizationServerMetadata?.registration_endpoint, `${RUNNER_URL}/oauth/register`);
    assert.equal(info.resourceMetadata?.resource, RUNNER_URL);
    const client = await registerClient(info.authorizationServerUrl, {
      metadata: info.authorizationServerMetadata,
      clientMetadata: {
        client_name: 'MCP test client',
        redirect_uris: ['http://localhost:9999/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      fetchFn: reroute,
    });
    assert.match(client.client_id, /^rnr_cid_/);
    assert.equal(client.client_secret, undefined);
  });

  test('oauth4webapi (strict): full flow with PKCE, iss check, code exchange, refresh and revocation', async () => {
    const issuer = new URL(RUNNER_URL);
    const options = { [oauth.customFetch]: reroute, [oauth.allowInsecureRequests]: true };
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...options, algorithm: 'oauth2' }));
    const redirectUri = 'http://127.0.0.1:7777/callback';
    const client = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [redirectUri], token_endpoint_auth_method: 'none', client_name: 'o4w' }, options),
    );
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: client.client_id, redirect_uri: redirectUri, response_type: 'code', scope: 'write', state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', resource: RUNNER_URL,
    }).toString();
    const location = await consent(new Browser(reroute), RUNNER_URL, url.href, { email: EMAIL });
    assert.ok(location.startsWith(`${redirectUri}?`));
    // validateAuthResponse checks state and the RFC 9207 iss parameter.
    const params = oauth.validateAuthResponse(as, client, new URL(location), state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as, client, await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, options),
    );
    assert.match(tokens.access_token, /^rnr_oat_/);
    assert.match(String(tokens.refresh_token), /^rnr_ort_/);
    assert.equal(tokens.expires_in, 3600);
    assert.equal(tokens.scope, 'write');
    for (const scheme of ['ApiKey', 'Bearer']) {
      const res = await me(`${scheme} ${tokens.access_token}`);
      assert.equal(res.status, 200, scheme);
      assert.equal((await res.json()).authenticatedBy, 'oauth');
    }

    const refreshed = await oauth.processRefreshTokenResponse(
      as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, options),
    );
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token, 'refresh tokens rotate');
    assert.equal((await me(`Bearer ${refreshed.access_token}`)).status, 200);

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, options));
    assert.equal((await me(`Bearer ${refreshed.access_token}`)).status, 401, 'revoking the refresh token ends its access tokens');
    assert.equal((await me(`Bearer ${tokens.access_token}`)).status, 401);
  });

  test('MCP SDK: registration, PKCE authorization, token exchange and refresh', async () => {
    const denied = await reroute(`${RUNNER_URL}/api/me`);
    const info = await discoverOAuthServerInfo(`${RUNNER_URL}/api/me`, { resourceMetadataUrl: extractResourceMetadataUrl(denied), fetchFn: reroute });
    const redirectUrl = 'http://localhost:43210/callback';
    const clientInformation = await registerClient(info.authorizationServerUrl, {
      metadata: info.authorizationServerMetadata,
      clientMetadata: { client_name: 'MCP', redirect_uris: [redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' },
      fetchFn: reroute,
    });
    const { authorizationUrl, codeVerifier } = await startAuthorization(info.authorizationServerUrl, {
      metadata: info.authorizationServerMetadata,
      clientInformation,
      redirectUrl,
      scope: 'read',
      state: 'mcp-state',
      resource: new URL(RUNNER_URL),
    });
    const location = new URL(await consent(new Browser(reroute), RUNNER_URL, authorizationUrl.href, { email: EMAIL }));
    assert.equal(location.searchParams.get('state'), 'mcp-state');
    assert.equal(location.searchParams.get('iss'), RUNNER_URL);
    const tokens = await exchangeAuthorization(info.authorizationServerUrl, {
      metadata: info.authorizationServerMetadata,
      clientInformation,
      authorizationCode: location.searchParams.get('code')!,
      codeVerifier,
      redirectUri: redirectUrl,
      resource: new URL(RUNNER_URL),
      fetchFn: reroute,
    });
    assert.equal(tokens.scope, 'read');
    assert.equal((await me(`Bearer ${tokens.access_token}`)).status, 200);
    const project = await reroute(`${RUNNER_URL}/api/projects`, {
      method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' }, body: '{"name":"x"}',
    });
    assert.equal(project.status, 403, 'a read token cannot write');
    const refreshed = await refreshAuthorization(info.authorizationServerUrl, {
      metadata: info.authorizationServerMetadata, clientInformation, refreshToken: tokens.refresh_token!, fetchFn: reroute,
    });
    assert.equal((await me(`Bearer ${refreshed.access_token}`)).status, 200);
  });
});
