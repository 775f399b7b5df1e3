import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/infra/config.js';

test('defaults give a working embedded setup', () => {
  const c = loadConfig({});
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.publishing.httpPort, 8080);
  assert.equal(c.publishing.downloadPort, 8081);
  assert.equal(c.publishing.sftpPort, 2222);
  assert.equal(c.runner.port, 8090);
  assert.equal(c.publishing.baseUrl, 'http://localhost:8080');
  assert.equal(c.runner.url, 'http://localhost:8090');
  assert.equal(c.publishing.databaseUrl, path.resolve('data/pier.sqlite'));
  assert.equal(c.runner.databaseUrl, path.resolve('data/runner.sqlite'));
  assert.equal(c.runner.apiKey, null);
});

test('public URLs lose trailing slashes; postgres URLs pass through', () => {
  const c = loadConfig({ PIER_BASE_URL: 'https://pier.example/', PIER_DATABASE_URL: 'postgres://u:p@db:5432/pier' });
  assert.equal(c.publishing.baseUrl, 'https://pier.example');
  assert.equal(c.publishing.databaseUrl, 'postgres://u:p@db:5432/pier');
});

test('a bad value names the variable', () => {
  const cases: [Record<string, string>, string][] = [
    [{ PIER_HTTP_PORT: 'eighty' }, 'PIER_HTTP_PORT'],
    [{ PIER_SFTP_PORT: '70000' }, 'PIER_SFTP_PORT'],
    [{ RUNNER_PORT: '-1' }, 'RUNNER_PORT'],
    [{ PIER_BASE_URL: 'not a url' }, 'PIER_BASE_URL'],
    [{ PIER_DOWNLOAD_URL: 'ftp://files.example' }, 'PIER_DOWNLOAD_URL'],
    [{ RUNNER_URL: 'https://r.example/?x=1' }, 'RUNNER_URL'],
    [{ PIER_DATABASE_URL: 'mysql://x' }, 'PIER_DATABASE_URL'],
    [{ API_KEY: 'short' }, 'API_KEY'],
    [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ PIER_LOG_LEVEL: 'loud' }, 'PIER_LOG_LEVEL'],
  ];
  for (const [env, variable] of cases) {
    assert.throws(
      () => loadConfig(env),
      (e: unknown) => e instanceof ConfigError && e.variable === variable && e.message.startsWith(variable),
      variable,
    );
  }
});
