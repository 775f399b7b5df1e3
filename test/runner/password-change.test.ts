import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { apiKey, bearer, startRunner, TestClock, type TestRunner, SETUP_TOKEN } from './helpers.js';
import { authorizeClient, PASSWORD, refreshAt } from './oauth-helpers.js';

const EMAIL = 'owner@example.com';
const NEW_PASSWORD = 'another long enough password';

/**
 * The password-change policy (README, "First administrator and login"): web sessions end and
 * connected applications lose their grants (they were authorized with the old password's
 * session); personal access tokens keep working, and the answer says so.
 */
for (const target of dialects()) {
  describe(`changing the password (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let a: TestRunner;
    let b: TestRunner;
    const clock = new TestClock();

    before(async () => {
      dbh = await target.create();
      a = await startRunner({ databaseUrl: dbh.url, clock });
      b = await startRunner({ databaseUrl: dbh.url, clock, dataDir: a.dataDir });
    });
    after(async () => {
      await b.close();
      await a.close();
      await dbh.drop();
    });

    test('ends web sessions and connected apps on every instance; personal tokens keep working, as the answer says', async () => {
      const setup = await a.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: EMAIL, password: PASSWORD } });
      const session = setup.json().session.token as string;
      const pat = (await a.service.app.inject({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 'ci', scope: 'read' } })).json().token as string;
      const first = await authorizeClient(a, EMAIL);
      const second = await authorizeClient(b, EMAIL, 'write');
      const onB = (h: Record<string, string>) => b.service.app.inject({ method: 'GET', url: '/api/me', headers: h });
      for (const t of [first, second]) assert.equal((await onB(bearer(t.access_token))).statusCode, 200);
      assert.equal((await onB(apiKey(pat))).statusCode, 200);

      const changed = await a.service.app.inject({
        method: 'PUT', url: '/api/me/password', headers: bearer(session), payload: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
      });
      assert.equal(changed.statusCode, 200, changed.body);
      const body = changed.json();
      assert.equal(body.revokedConnectedApps, 2);
      assert.equal(body.keptPersonalTokens, 1);
      assert.match(body.notice, /personal access tokens keep working/i);

      assert.equal((await onB(bearer(session))).statusCode, 401, 'the old web session ended');
      assert.equal((await onB(bearer(body.token))).statusCode, 200, 'the new session works');
      for (const t of [first, second]) {
        assert.equal((await onB(bearer(t.access_token))).statusCode, 401, 'OAuth access tokens end');
        assert.equal((await refreshAt(b, t.clientId, t.refresh_token)).json().error, 'invalid_grant', 'refresh tokens end');
      }
      const apps = await b.service.app.inject({ method: 'GET', url: '/api/connected-apps', headers: bearer(body.token) });
      assert.deepEqual(apps.json().items, [], 'no application stays connected');
      assert.equal((await onB(apiKey(pat))).statusCode, 200, 'personal tokens keep working');
      assert.equal((await onB(bearer(pat))).statusCode, 200);
    });
  });
}
