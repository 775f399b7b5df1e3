import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
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
  assert.equal(c.trustProxy, false);
  assert.equal(c.runner.storageDir, path.resolve('data/runner'));
});

test('PIER_TRUST_PROXY: off, a hop count or a list of addresses and CIDR blocks', () => {
  assert.equal(loadConfig({ PIER_TRUST_PROXY: 'off' }).trustProxy, false);
  assert.equal(loadConfig({ PIER_TRUST_PROXY: '2' }).trustProxy, 2);
  assert.deepEqual(loadConfig({ PIER_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1,fd00::/8' }).trustProxy, ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8']);
  assert.equal(loadConfig({ RUNNER_STORAGE_DIR: '/srv/shared/runner' }).runner.storageDir, '/srv/shared/runner');
});

test('storage and limits: defaults under the data dir, sizes with binary units', () => {
  const c = loadConfig({ PIER_DATA_DIR: '/srv/pier' });
  assert.equal(c.publishing.storageDir, '/srv/pier/storage');
  assert.deepEqual(c.publishing.limits, { quotaBytes: 5 * 1024 ** 3, quotaFiles: 100_000, maxFileBytes: 2 * 1024 ** 3, quotaFolders: 10_000 });
  const d = loadConfig({ PIER_STORAGE_DIR: '/mnt/shared', PIER_QUOTA_BYTES: '500M', PIER_MAX_FILE_BYTES: '64k', PIER_QUOTA_FILES: '10', PIER_QUOTA_FOLDERS: '20' });
  assert.equal(d.publishing.storageDir, '/mnt/shared');
  assert.deepEqual(d.publishing.limits, { quotaBytes: 500 * 1024 ** 2, quotaFiles: 10, maxFileBytes: 64 * 1024, quotaFolders: 20 });
  assert.throws(() => loadConfig({ PIER_QUOTA_FOLDERS: '0' }), /PIER_QUOTA_FOLDERS/);
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
    [{ API_KEY: 'x'.repeat(31) }, 'API_KEY'],
    [{ API_KEY: '😀'.repeat(16) }, 'API_KEY'],
    [{ API_KEY: ` ${'x'.repeat(40)} ` }, 'API_KEY'],
    [{ API_KEY: `${'x'.repeat(20)} ${'y'.repeat(20)}` }, 'API_KEY'],
    [{ PIER_PAGE_SHARED_MAX_AGE: '-1' }, 'PIER_PAGE_SHARED_MAX_AGE'],
    [{ PIER_TRUST_PROXY: 'true' }, 'PIER_TRUST_PROXY'],
    [{ PIER_TRUST_PROXY: '10.0.0.0/33' }, 'PIER_TRUST_PROXY'],
    [{ PIER_TRUST_PROXY: '999' }, 'PIER_TRUST_PROXY'],
    [{ PIER_TRUST_PROXY: 'proxy.example' }, 'PIER_TRUST_PROXY'],
    [{ JWT_SECRET: 'short' }, 'JWT_SECRET'],
    [{ PIER_LOG_LEVEL: 'loud' }, 'PIER_LOG_LEVEL'],
    [{ PIER_QUOTA_BYTES: 'lots' }, 'PIER_QUOTA_BYTES'],
    [{ PIER_QUOTA_BYTES: '0' }, 'PIER_QUOTA_BYTES'],
    [{ PIER_MAX_FILE_BYTES: '-5M' }, 'PIER_MAX_FILE_BYTES'],
    [{ PIER_QUOTA_FILES: '1.5' }, 'PIER_QUOTA_FILES'],
    [{ PIER_SFTP_MAX_SESSIONS: '0' }, 'PIER_SFTP_MAX_SESSIONS'],
    [{ RUNNER_RETENTION_DAYS: '-1' }, 'RUNNER_RETENTION_DAYS'],
    [{ RUNNER_RETENTION_DAYS: '7d' }, 'RUNNER_RETENTION_DAYS'],
    [{ RUNNER_RETENTION_DAYS: '36501' }, 'RUNNER_RETENTION_DAYS'],
    [{ RUNNER_CALLER_RATE: '0' }, 'RUNNER_CALLER_RATE'],
    [{ RUNNER_CALLER_RATE: '2.5' }, 'RUNNER_CALLER_RATE'],
    [{ RUNNER_CALLER_BURST: '0' }, 'RUNNER_CALLER_BURST'],
    [{ RUNNER_CALLER_QUEUE: '-1' }, 'RUNNER_CALLER_QUEUE'],
    [{ RUNNER_CALLER_QUEUE: '100001' }, 'RUNNER_CALLER_QUEUE'],
  ];
  for (const [env, variable] of cases) {
    assert.throws(
      () => loadConfig(env),
      (e: unknown) => e instanceof ConfigError && e.variable === variable && e.message.startsWith(variable),
      variable,
    );
  }
});

test('RUNNER_RETENTION_DAYS: default 30, 0 keeps runs forever', () => {
  assert.equal(loadConfig({}).runner.retentionDays, 30);
  assert.equal(loadConfig({ RUNNER_RETENTION_DAYS: '0' }).runner.retentionDays, 0);
  assert.equal(loadConfig({ RUNNER_RETENTION_DAYS: '365' }).runner.retentionDays, 365);
});

test('RUNNER_CALLER_RATE, _BURST, _QUEUE: 100 a second, 200 at once, 256 waiting; a queue of 0 refuses at once', () => {
  assert.deepEqual(loadConfig({}).runner.pace, { rate: 100, burst: 200, queue: 256 });
  assert.deepEqual(loadConfig({ RUNNER_CALLER_RATE: '5', RUNNER_CALLER_BURST: '10', RUNNER_CALLER_QUEUE: '0' }).runner.pace, { rate: 5, burst: 10, queue: 0 });
});

test('RUNNER_PROJECT_STORAGE_BYTES: default 10 GiB, 0 = no limit, a size with a unit', () => {
  assert.equal(loadConfig({}).runner.projectStorageBytes, 10 * 1024 ** 3);
  assert.equal(loadConfig({ RUNNER_PROJECT_STORAGE_BYTES: '0' }).runner.projectStorageBytes, 0);
  assert.equal(loadConfig({ RUNNER_PROJECT_STORAGE_BYTES: '500M' }).runner.projectStorageBytes, 500 * 1024 ** 2);
  assert.equal(loadConfig({ RUNNER_PROJECT_STORAGE_BYTES: '10737418240' }).runner.projectStorageBytes, 10737418240);
  for (const bad of ['-1', '1.5G', 'ten', '5X', '0x10', '99999999999999999999']) {
    assert.throws(
      () => loadConfig({ RUNNER_PROJECT_STORAGE_BYTES: bad }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'RUNNER_PROJECT_STORAGE_BYTES' && /0 \(no limit\) or a positive size/.test(e.message),
      bad,
    );
  }
});

test('RUNNER_PROJECT_STORAGE_BYTES: every whole number of bytes up to 2^53 reads as itself; anything else is refused, never misread', () => {
  fc.assert(
    fc.property(fc.maxSafeNat(), (n) => {
      assert.equal(loadConfig({ RUNNER_PROJECT_STORAGE_BYTES: String(n) }).runner.projectStorageBytes, n);
    }),
  );
  fc.assert(
    fc.property(fc.string({ maxLength: 12 }), (raw) => {
      let read: number | undefined;
      try {
        read = loadConfig({ RUNNER_PROJECT_STORAGE_BYTES: raw }).runner.projectStorageBytes;
      } catch (e) {
        assert.ok(e instanceof ConfigError && e.variable === 'RUNNER_PROJECT_STORAGE_BYTES', String(e));
        return;
      }
      // Accepted: empty (the default), or digits with at most a binary unit; never negative.
      assert.ok(raw.trim() === '' || /^\d+\s*([kKmMgGtT])?i?[bB]?$/.test(raw.trim()), raw);
      assert.ok(Number.isSafeInteger(read) && read >= 0, raw);
    }),
  );
});
