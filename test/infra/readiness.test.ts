// /readyz follows the database: 503 while the part's PostgreSQL database takes no
// connection, with a reason that names no host, port or user; ready again once it does. One check
// a second serves every probe, so a flood of probes is not a flood of queries.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { loadConfig } from '../../src/infra/config.js';
import { readinessProbe } from '../../src/infra/readiness.js';
import { createPublishingService } from '../../src/publishing/service.js';
import { createRunnerService } from '../../src/runner/service.js';
import { createPostgresDatabase, tempDir } from '../helpers/db.js';

const adminUrl = process.env.TEST_DATABASE_URL;

test('a flood of probes runs one check a second, and at most one at a time', async () => {
  let checks = 0;
  let inFlight = 0;
  let most = 0;
  const probe = readinessProbe(async () => {
    checks++;
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise((r) => setTimeout(r, 20));
    inFlight--;
    return null;
  });
  const answers = await Promise.all(Array.from({ length: 500 }, () => probe()));
  assert.ok(answers.every((a) => a === null));
  for (let i = 0; i < 200; i++) await probe();
  assert.equal(checks, 1);
  assert.equal(most, 1);
});

test('a check that never answers counts as not ready after its timeout', { timeout: 10_000 }, async () => {
  const probe = readinessProbe(() => new Promise<string | null>(() => {}));
  assert.match((await probe()) ?? '', /no answer within/);
});

test('/readyz of the web part and the runner: 503 while their PostgreSQL takes no connection, 200 again after', { skip: adminUrl ? false : 'TEST_DATABASE_URL is not set', timeout: 60_000 }, async () => {
  const db = await createPostgresDatabase(adminUrl!);
  const name = new URL(db.url).pathname.slice(1);
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const config = loadConfig({ PIER_DATA_DIR: tempDir('pier-readyz-pg-'), PIER_LOG_LEVEL: 'silent', PIER_DATABASE_URL: db.url, RUNNER_DATABASE_URL: db.url });
  const web = await createPublishingService(config);
  const runner = await createRunnerService(config, { backgroundLoops: false, sweeper: false });
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);
  process.on('warning', onWarning);
  try {
    for (const app of [web.app, runner.app]) assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200);
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
    // Past the reuse of the last good check.
    await new Promise((r) => setTimeout(r, 1100));
    for (const app of [web.app, runner.app]) {
      const res = await app.inject({ url: '/readyz' });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().code, 'not_ready');
      assert.equal(res.json().detail, 'the database does not answer');
      assert.doesNotMatch(res.body, /127\.0\.0\.1|postgres|5432|55432/, 'the answer names no host, port or user');
      assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'liveness is not readiness');
    }
    assert.ok(warnings.some((w) => /readiness: database check failed/.test(w)), 'the reason is in the log');
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    await new Promise((r) => setTimeout(r, 1100));
    for (const app of [web.app, runner.app]) assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200);
  } finally {
    process.off('warning', onWarning);
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`).catch(() => {});
    await runner.close();
    await web.close();
    await admin.end();
    await db.drop();
  }
});
