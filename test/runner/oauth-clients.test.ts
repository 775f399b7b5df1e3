import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  discoverOAuthServerInfo,
  extractResourceMetadataUrl,
  registerClient,
} from '@modelcontextprotocol/sdk/client/auth.js';
import * as oauth from 'oauth4webapi';
import { startRunner, type TestRunner } from './helpers.js';

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

  before(async () => {
    r = await startRunner();
    await r.service.app.listen({ host: '127.0.0.1', port: 0 });
    origin = `http://127.0.0.1:${(r.service.app.server.address() as AddressInfo).port}`;
  });
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
});
