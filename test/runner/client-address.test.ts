import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/infra/config.js';
import { createPublishingService } from '../../src/publishing/service.js';
import { dialects, tempDir } from '../helpers/db.js';
import { API_KEY, apiKey, startRunner, SETUP_TOKEN } from './helpers.js';

describe('rejected ApiKey/Bearer credentials are scored per address', () => {
  test('past the limit even a right token gets 429 from that address, and only from it; the right admin key still passes', async () => {
    const r = await startRunner();
    try {
      const setup = await r.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'a@example.com', password: 'a long enough password' } });
      const session = `Bearer ${setup.json().session.token as string}`;
      const call = (authorization: string | undefined, remoteAddress: string, url = '/api/executors') =>
        r.service.app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {}, remoteAddress });
      for (let i = 0; i < 60; i++) assert.equal((await call(undefined, '10.1.0.1')).statusCode, 401, 'no credentials guess nothing');
      assert.equal((await call(`ApiKey ${API_KEY}`, '10.1.0.1')).statusCode, 200);
      for (let i = 0; i < 25; i++) assert.equal((await call(`ApiKey wrong-key-${i}-0123456789abcdef0123456789`, '10.1.0.1')).statusCode, 401);
      for (let i = 0; i < 25; i++) assert.equal((await call(`Bearer not.a.jwt${i}`, '10.1.0.1')).statusCode, 401);
      const banned = await call(session, '10.1.0.1', '/api/me');
      assert.equal(banned.statusCode, 429);
      assert.equal(banned.json().code, 'too_many_requests');
      assert.ok(Number(banned.headers['retry-after']) > 0);
      assert.equal((await call(`ApiKey ${API_KEY}`, '10.1.0.1')).statusCode, 200, 'the admin key is not locked out by other clients');
      assert.equal((await call(session, '10.1.0.2', '/api/me')).statusCode, 200, 'another address is not affected');
      r.clock.advance(15 * 60_000 + 1);
      assert.equal((await call(session, '10.1.0.1', '/api/me')).statusCode, 200, 'the ban ends');
    } finally {
      await r.close();
    }
  });
});

describe('PIER_TRUST_PROXY decides the client address', () => {
  /** The address the runner records for an executor registered through `remote` with X-Forwarded-For. */
  async function runnerSees(trust: string | undefined, remoteAddress: string, forwardedFor: string): Promise<string> {
    const r = await startRunner({ env: trust === undefined ? {} : { PIER_TRUST_PROXY: trust } });
    try {
      const res = await r.service.app.inject({
        method: 'POST', url: '/api/executors/register', remoteAddress,
        headers: { ...apiKey(API_KEY), 'x-forwarded-for': forwardedFor }, payload: { name: 'x' },
      });
      assert.equal(res.statusCode, 201, res.body);
      return res.json().lastIp;
    } finally {
      await r.close();
    }
  }

  test('runner: off by default, a trusted proxy list, a hop count', async () => {
    assert.equal(await runnerSees(undefined, '127.0.0.1', '10.5.5.5'), '127.0.0.1', 'off: the header is anyone\'s to forge');
    assert.equal(await runnerSees('127.0.0.1', '127.0.0.1', '10.5.5.5'), '10.5.5.5');
    assert.equal(await runnerSees('127.0.0.0/8', '127.0.0.1', '10.5.5.5, 127.0.0.9'), '10.5.5.5', 'every proxy in the list is skipped');
    assert.equal(await runnerSees('127.0.0.1', '10.9.9.9', '10.5.5.5'), '10.9.9.9', 'an untrusted peer cannot choose its address');
    assert.equal(await runnerSees('1', '10.9.9.9', '1.1.1.1, 10.5.5.5'), '10.5.5.5', 'one hop: the proxy\'s view of the client');
    assert.equal(await runnerSees('2', '10.9.9.9', '1.1.1.1, 10.5.5.5'), '1.1.1.1');
  });

  test('publishing: failed edit tokens are scored per forwarded client address', async () => {
    const [target] = dialects();
    const db = await target!.create();
    for (const trust of ['127.0.0.1', 'off']) {
      const config = loadConfig({ PIER_DATA_DIR: tempDir(), PIER_DATABASE_URL: db.url, PIER_LOG_LEVEL: 'silent', PIER_TRUST_PROXY: trust });
      const pier = await createPublishingService(config, { failureLimits: { maxFailures: 2, banMs: 30_000 } });
      try {
        const id = `trust-${trust.replace(/\W/g, '')}`;
        await pier.products.register(id, { name: 'Trust' });
        const get = (forwardedFor: string) =>
          pier.app.inject({ method: 'GET', url: `/api/products/${id}`, remoteAddress: '127.0.0.1', headers: { authorization: 'Bearer pier_et_wrong', 'x-forwarded-for': forwardedFor } });
        await get('10.0.0.1');
        await get('10.0.0.1');
        assert.equal((await get('10.0.0.1')).statusCode, 429);
        assert.equal((await get('10.0.0.2')).statusCode, trust === 'off' ? 429 : 401, `trust ${trust}`);
      } finally {
        await pier.close();
      }
    }
    await db.drop();
  });
});
