import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../../src/infra/config.js';

test('trusted publishing settings: defaults (audience = PIER_BASE_URL, the public CI issuers)', () => {
  assert.deepEqual(loadConfig({ PIER_BASE_URL: 'https://pier.example/' }).publishing.oidc, {
    audience: 'https://pier.example',
    githubIssuer: 'https://token.actions.githubusercontent.com',
    gitlabIssuer: 'https://gitlab.com',
  });
  assert.deepEqual(
    loadConfig({ PIER_OIDC_AUDIENCE: 'pier', PIER_OIDC_GITHUB_ISSUER: 'https://ghe.example/_services/token', PIER_OIDC_GITLAB_ISSUER: 'https://gitlab.example' })
      .publishing.oidc,
    { audience: 'pier', githubIssuer: 'https://ghe.example/_services/token', gitlabIssuer: 'https://gitlab.example' },
  );
});

test('issuers: https only, plain http on loopback addresses only; a bad value stops start-up naming the variable', () => {
  for (const ok of ['http://127.0.0.1:9999', 'http://localhost:1', 'http://[::1]:8080', 'http://127.1.2.3']) {
    assert.equal(loadConfig({ PIER_OIDC_GITLAB_ISSUER: ok }).publishing.oidc.gitlabIssuer, ok);
  }
  for (const [name, bad] of [
    ['PIER_OIDC_GITHUB_ISSUER', 'http://token.actions.githubusercontent.com'],
    ['PIER_OIDC_GITLAB_ISSUER', 'http://10.0.0.5'],
    ['PIER_OIDC_GITLAB_ISSUER', 'http://localhost.evil.example'],
    ['PIER_OIDC_GITHUB_ISSUER', 'ftp://x.example'],
    ['PIER_OIDC_GITHUB_ISSUER', 'not a url'],
    ['PIER_OIDC_AUDIENCE', 'with space'],
  ] as const) {
    assert.throws(
      () => loadConfig({ [name]: bad }),
      (e: unknown) => e instanceof ConfigError && e.variable === name,
      `${name}=${bad}`,
    );
  }
});
