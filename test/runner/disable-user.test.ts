import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { apiKey, bearer, SETUP_TOKEN, startRunner, TestClock, type TestRunner } from './helpers.js';
import { authorizeClient, PASSWORD, refreshAt } from './oauth-helpers.js';

/**
 * Disabling an account (an administrator's PATCH /api/users/{id} {disabled: true}): none of its
 * credentials works on any instance while disabled — web sessions end, OAuth grants are revoked,
 * personal tokens are refused — and signing in says why. Enabling it again lets the owner sign in
 * and their personal tokens work again.
 */
for (const target of dialects()) {
  describe(`disabling a user (${target.name})`, () => {
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

    test('ends every credential on every instance, says so at sign-in, keeps the last administrator and oneself; enabling brings the account back', async () => {
      const onA = a.service.app.inject.bind(a.service.app);
      const onB = b.service.app.inject.bind(b.service.app);
      const root = (await onA({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json();
      const admin = bearer(root.session.token);
      const user = (await onA({ method: 'POST', url: '/api/users', headers: admin, payload: { email: 'dan@example.com', password: PASSWORD } })).json();
      assert.equal(user.disabled, false);
      const login = () => onB({ method: 'POST', url: '/api/auth/login', payload: { email: 'dan@example.com', password: PASSWORD } });
      const session = (await login()).json().token as string;
      const pat = (await onA({ method: 'POST', url: '/api/tokens', headers: bearer(session), payload: { name: 'ci', scope: 'read' } })).json().token as string;
      const app = await authorizeClient(a, 'dan@example.com');
      const me = (h: Record<string, string>) => onB({ method: 'GET', url: '/api/me', headers: h });
      for (const h of [bearer(session), apiKey(pat), bearer(app.access_token)]) assert.equal((await me(h)).statusCode, 200);

      const disabled = await onA({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { disabled: true } });
      assert.equal(disabled.statusCode, 200, disabled.body);
      assert.equal(disabled.json().disabled, true);
      for (const h of [bearer(session), apiKey(pat), bearer(app.access_token)]) {
        const res = await me(h);
        assert.equal(res.statusCode, 401, 'refused on the other instance too');
      }
      assert.match((await me(apiKey(pat))).json().detail, /disabled/);
      assert.equal((await refreshAt(b, app.clientId, app.refresh_token)).json().error, 'invalid_grant');
      const refused = await login();
      assert.equal(refused.statusCode, 401);
      assert.match(refused.json().detail, /disabled/);
      // A wrong password still says only that: whether an account is disabled is for its owner.
      const wrong = await onB({ method: 'POST', url: '/api/auth/login', payload: { email: 'dan@example.com', password: 'not the password!' } });
      assert.doesNotMatch(wrong.json().detail, /disabled/);

      // The last enabled administrator, and oneself, cannot be disabled.
      const self = await onA({ method: 'PATCH', url: `/api/users/${root.user.id}`, headers: admin, payload: { disabled: true } });
      assert.equal(self.statusCode, 409);
      assert.equal(self.json().code, 'self_disable');
      await onA({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { role: 'admin' } });
      const other = (await onA({ method: 'POST', url: '/api/users', headers: admin, payload: { email: 'eve@example.com', password: PASSWORD, role: 'admin' } })).json();
      const eve = bearer((await onA({ method: 'POST', url: '/api/auth/login', payload: { email: 'eve@example.com', password: PASSWORD } })).json().token);
      // root and eve are the enabled administrators (dan is disabled): eve disabling root leaves eve.
      assert.equal((await onA({ method: 'PATCH', url: `/api/users/${root.user.id}`, headers: eve, payload: { disabled: true } })).statusCode, 200);
      const last = await onA({ method: 'PATCH', url: `/api/users/${other.id}`, headers: bearer((await onA({ method: 'POST', url: '/api/auth/login', payload: { email: 'eve@example.com', password: PASSWORD } })).json().token), payload: { role: 'member' } });
      assert.equal(last.statusCode, 409);
      assert.equal(last.json().code, 'last_admin');

      // Enabled again: sign-in works and the personal token is back; the OAuth grant stays revoked.
      assert.equal((await onA({ method: 'PATCH', url: `/api/users/${user.id}`, headers: eve, payload: { disabled: false } })).statusCode, 200);
      assert.equal((await login()).statusCode, 200);
      assert.equal((await me(apiKey(pat))).statusCode, 200);
      assert.equal((await me(bearer(app.access_token))).statusCode, 401);
    });
  });
}
