import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dialects } from '../helpers/db.js';
import { bearer, startRunner, TestClock, type TestRunner, SETUP_TOKEN } from './helpers.js';
import { authorizeClient, PASSWORD, refreshAt } from './oauth-helpers.js';

const EMAIL = 'owner@example.com';
const TRIALS = 6;
const CHAINS = 4;

/**
 * Revoking a connected application while its client refreshes, on two instances of one database:
 * the revocation always succeeds, and once it has answered no token of the grant works, however
 * the refreshes interleave with it (each refresh and the revocation lock the grant first).
 */
for (const target of dialects()) {
  describe(`revoking a connected app during refreshes (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let a: TestRunner;
    let b: TestRunner;
    let session: string;
    const clock = new TestClock();

    before(async () => {
      dbh = await target.create();
      a = await startRunner({ databaseUrl: dbh.url, clock });
      b = await startRunner({ databaseUrl: dbh.url, clock, dataDir: a.dataDir });
      const setup = await a.service.app.inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: EMAIL, password: PASSWORD } });
      assert.equal(setup.statusCode, 201, setup.body);
      session = setup.json().session.token;
    });
    after(async () => {
      await b.close();
      await a.close();
      await dbh.drop();
    });

    test('no 500, the revocation holds, and every token of the grant is rejected afterwards', async () => {
      for (let trial = 0; trial < TRIALS; trial++) {
        const first = await authorizeClient(a, EMAIL);
        const issued = { access: [first.access_token], refresh: [first.refresh_token] };
        let revoked = false;
        const failures: string[] = [];
        /** One process of the client: refreshes its own chain until the grant is gone. */
        const chain = async (i: number) => {
          const on = i % 2 === 0 ? a : b;
          // Every chain starts from the one refresh token (several processes of one client).
          let current = first.refresh_token;
          for (let step = 0; step < 20; step++) {
            const res = await refreshAt(on, first.clientId, current);
            if (res.statusCode === 200) {
              const t = res.json() as { access_token: string; refresh_token: string };
              issued.access.push(t.access_token);
              issued.refresh.push(t.refresh_token);
              current = t.refresh_token;
            } else if (res.statusCode === 400 && res.json().error === 'invalid_grant') {
              if (revoked) return;
            } else {
              failures.push(`refresh: ${res.statusCode} ${res.body}`);
              return;
            }
          }
        };
        const revoke = async () => {
          // Let the chains get going, then revoke through the other instance's API.
          await refreshAt(b, first.clientId, 'rnr_ort_not_a_token');
          const res = await (trial % 2 === 0 ? a : b).service.app.inject({
            method: 'DELETE', url: `/api/connected-apps/${first.clientId}`, headers: bearer(session),
          });
          if (res.statusCode !== 204) failures.push(`revoke: ${res.statusCode} ${res.body}`);
          revoked = true;
        };
        await Promise.all([...Array.from({ length: CHAINS }, (_, i) => chain(i)), revoke()]);
        assert.deepEqual(failures, [], `trial ${trial}`);

        const apps = await a.service.app.inject({ method: 'GET', url: '/api/connected-apps', headers: bearer(session) });
        assert.ok(!apps.json().items.some((x: { clientId: string }) => x.clientId === first.clientId), 'the app is no longer connected');
        for (const access of issued.access) {
          for (const on of [a, b]) {
            const me = await on.service.app.inject({ method: 'GET', url: '/api/me', headers: bearer(access), remoteAddress: `10.3.${trial}.1` });
            assert.equal(me.statusCode, 401, `trial ${trial}: an access token of the revoked grant still works`);
          }
        }
        for (const refresh of issued.refresh) {
          const res = await refreshAt(b, first.clientId, refresh);
          assert.equal(res.json().error, 'invalid_grant', `trial ${trial}: a refresh token of the revoked grant still works`);
        }
        clock.advance(60_000);
      }
    });
  });
}
