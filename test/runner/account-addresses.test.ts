import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_PENDING_INVITATIONS } from '../../src/runner/projects/invitations.js';
import { dialects } from '../helpers/db.js';
import { apiKey, bearer, SETUP_TOKEN, startRunner, TestClock, type TestRunner } from './helpers.js';

const PASSWORD = 'a long enough password';
type Headers = Record<string, string>;

/**
 * Addresses name people to others (an owner adds a colleague by address), so an account cannot
 * take one on its own say: without mail only administrators set addresses, and with mail a new
 * address waits for the link sent to it. Adding by address invites whoever holds it, and answers
 * the same whether or not an account does.
 */
for (const target of dialects()) {
  describe(`account addresses and invitations (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    let admin: Headers;
    const clock = new TestClock();

    const inject = (method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, headers: Headers, payload?: object) =>
      r.service.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
    const login = async (email: string): Promise<Headers> => {
      const res = await inject('POST', '/api/auth/login', {}, { email, password: PASSWORD });
      assert.equal(res.statusCode, 200, res.body);
      return bearer(res.json().token);
    };
    const createUser = async (email: string): Promise<{ id: string; headers: Headers }> => {
      const res = await inject('POST', '/api/users', admin, { email, password: PASSWORD });
      assert.equal(res.statusCode, 201, res.body);
      return { id: res.json().id, headers: await login(email) };
    };
    const createProject = async (owner: Headers, name: string): Promise<string> => {
      const res = await inject('POST', '/api/projects', owner, { name });
      assert.equal(res.statusCode, 201, res.body);
      return res.json().id;
    };

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, clock });
      const setup = await inject('POST', '/api/setup', {}, { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD });
      assert.equal(setup.statusCode, 201, setup.body);
      admin = bearer(setup.json().session.token);
    });
    after(async () => {
      await r.close();
      await dbh.drop();
    });

    test("a member cannot take a new hire's address; the hire's account is created and gets the invitation", async () => {
      const owner = await createUser('owner@example.com');
      const mallory = await createUser('mallory@example.com');
      const projectId = await createProject(owner.headers, 'Payroll');

      const taken = await inject('PATCH', '/api/me', mallory.headers, { name: 'Not Mallory', email: 'new.hire@example.com' });
      assert.equal(taken.statusCode, 403, taken.body);
      assert.equal(taken.json().code, 'email_change_needs_admin');
      assert.deepEqual(taken.json().errors.map((e: { field: string }) => e.field), ['email']);
      assert.match(taken.json().detail, /ask an administrator/);
      const me = (await inject('GET', '/api/me', mallory.headers)).json();
      assert.deepEqual([me.email, me.name], ['mallory@example.com', 'mallory'], 'nothing of the refused change was stored');
      // Sending one's own address (any case) is no change: the profile form always sends it.
      const renamed = await inject('PATCH', '/api/me', mallory.headers, { name: 'Mallory', email: 'Mallory@Example.com' });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.deepEqual([renamed.json().name, renamed.json().email, renamed.json().pendingEmail], ['Mallory', 'mallory@example.com', null]);

      // The owner adds the hire's address before the account exists: an invitation, nobody gets in.
      const invited = await inject('POST', `/api/projects/${projectId}/members`, owner.headers, { email: 'New.Hire@example.com', role: 'editor' });
      assert.equal(invited.statusCode, 202, invited.body);
      assert.deepEqual([invited.json().emailHint, invited.json().role, invited.json().projectName], ['n…@example.com', 'editor', 'Payroll']);
      assert.deepEqual((await inject('GET', '/api/me/invitations', mallory.headers)).json().items, []);
      assert.equal((await inject('GET', `/api/projects/${projectId}`, mallory.headers)).statusCode, 404);

      // The administrator creates the real account (the address is free), and its holder sees the invitation.
      const hire = await createUser('new.hire@example.com');
      const mine = (await inject('GET', '/api/me/invitations', hire.headers)).json().items;
      assert.equal(mine.length, 1);
      assert.deepEqual([mine[0].projectId, mine[0].projectName, mine[0].role, mine[0].invitedBy], [projectId, 'Payroll', 'editor', { name: 'owner', email: 'owner@example.com' }]);
      assert.equal((await inject('GET', `/api/projects/${projectId}`, hire.headers)).statusCode, 404, 'not a member before accepting');
      const accepted = await inject('POST', `/api/me/invitations/${mine[0].id}/accept`, hire.headers);
      assert.equal(accepted.statusCode, 200, accepted.body);
      assert.deepEqual(accepted.json(), { projectId, role: 'editor' });
      const members = (await inject('GET', `/api/projects/${projectId}/members`, hire.headers)).json().items;
      assert.deepEqual(members.map((m: { email: string; role: string }) => [m.email, m.role]), [['new.hire@example.com', 'editor'], ['owner@example.com', 'owner']]);
      assert.deepEqual((await inject('GET', `/api/projects/${projectId}/invitations`, owner.headers)).json().items, [], 'used up');
      assert.equal((await inject('POST', `/api/me/invitations/${mine[0].id}/accept`, hire.headers)).statusCode, 404);

      // Administrators set addresses: another user's, and their own, at once; a taken one is 409.
      const moved = await inject('PATCH', `/api/users/${mallory.id}`, admin, { email: 'm.allory@example.com' });
      assert.equal(moved.statusCode, 200, moved.body);
      assert.equal(moved.json().email, 'm.allory@example.com');
      assert.equal((await inject('PATCH', `/api/users/${mallory.id}`, admin, { email: 'new.hire@example.com' })).json().code, 'email_taken');
      const own = await inject('PATCH', '/api/me', admin, { email: 'root2@example.com' });
      assert.deepEqual([own.statusCode, own.json().email, own.json().pendingEmail], [200, 'root2@example.com', null]);
      await inject('PATCH', '/api/me', admin, { email: 'root@example.com' });
    });

    test('adding by address answers alike whether or not an account has it; owners see and withdraw the invitations', async () => {
      const owner = await createUser('olga@example.com');
      const bob = await createUser('bob@example.com');
      const editor = await createUser('eddie@example.com');
      const projectId = await createProject(owner.headers, 'Forecasts');
      const members = `/api/projects/${projectId}/members`;
      const pending = `/api/projects/${projectId}/invitations`;
      const eddieInvite = (await inject('POST', members, owner.headers, { email: 'eddie@example.com', role: 'editor' })).json();
      assert.equal((await inject('POST', `/api/me/invitations/${eddieInvite.id}/accept`, editor.headers)).statusCode, 200);

      const forAccount = await inject('POST', members, owner.headers, { email: 'bob@example.com', role: 'viewer' });
      const forNobody = await inject('POST', members, owner.headers, { email: 'bart@example.com', role: 'viewer' });
      assert.deepEqual([forAccount.statusCode, forNobody.statusCode], [202, 202]);
      const shape = (body: Record<string, unknown>) => ({ ...body, id: typeof body.id, emailHint: typeof body.emailHint });
      assert.deepEqual(shape(forAccount.json()), shape(forNobody.json()), 'the same answer for an address with and without an account');
      assert.deepEqual([forAccount.json().emailHint, forNobody.json().emailHint], ['b…@example.com', 'b…@example.com']);
      assert.equal((await inject('GET', `/api/projects/${projectId}`, bob.headers)).statusCode, 404, 'an invitation is not a membership');

      // A current member's address changes their role at once (the owner sees member addresses anyway).
      const promoted = await inject('POST', members, owner.headers, { email: 'Eddie@example.com', role: 'owner' });
      assert.deepEqual([promoted.statusCode, promoted.json().email, promoted.json().role], [200, 'eddie@example.com', 'owner']);
      await inject('PUT', `${members}/${editor.id}`, owner.headers, { role: 'editor' });

      // Owners list the pending invitations (newest first); editors, viewers and strangers cannot.
      const listed = await inject('GET', pending, owner.headers);
      assert.equal(listed.statusCode, 200, listed.body);
      assert.deepEqual(listed.json().items.map((i: { id: string }) => i.id).sort(), [forAccount.json().id, forNobody.json().id].sort());
      assert.equal((await inject('GET', pending, editor.headers)).statusCode, 403);
      assert.equal((await inject('GET', pending, bob.headers)).statusCode, 404);
      assert.equal((await inject('DELETE', `${pending}/${forNobody.json().id}`, editor.headers)).statusCode, 403);

      // Inviting again renews the one invitation with the new role.
      const again = await inject('POST', members, owner.headers, { email: 'bob@example.com', role: 'editor' });
      assert.deepEqual([again.statusCode, again.json().id, again.json().role], [202, forAccount.json().id, 'editor']);
      assert.equal((await inject('GET', pending, owner.headers)).json().items.length, 2);

      // Only the holder of the address sees and uses an invitation; a token cannot accept for them.
      assert.equal((await inject('POST', `/api/me/invitations/${forNobody.json().id}/accept`, bob.headers)).statusCode, 404);
      assert.equal((await inject('DELETE', `/api/me/invitations/${forNobody.json().id}`, bob.headers)).statusCode, 404);
      const pat = (await inject('POST', '/api/tokens', bob.headers, { name: 'ci', scope: 'write' })).json().token;
      assert.equal((await inject('POST', `/api/me/invitations/${forAccount.json().id}/accept`, apiKey(pat))).statusCode, 403);
      assert.equal((await inject('GET', '/api/me/invitations', apiKey(pat))).statusCode, 403);

      // The account created later for the other address sees its invitation and declines it.
      const bart = await createUser('bart@example.com');
      const bartsInvites = (await inject('GET', '/api/me/invitations', bart.headers)).json().items;
      assert.deepEqual(bartsInvites.map((i: { id: string }) => i.id), [forNobody.json().id]);
      assert.equal((await inject('DELETE', `/api/me/invitations/${forNobody.json().id}`, bart.headers)).statusCode, 204);
      assert.equal((await inject('POST', `/api/me/invitations/${forNobody.json().id}/accept`, bart.headers)).statusCode, 404);

      // The owner withdraws bob's: gone from both lists.
      assert.equal((await inject('DELETE', `${pending}/${forAccount.json().id}`, owner.headers)).statusCode, 204);
      assert.deepEqual((await inject('GET', '/api/me/invitations', bob.headers)).json().items, []);
      assert.deepEqual((await inject('GET', pending, owner.headers)).json().items, []);

      // An address the administrator gives an account brings the invitations to that address with it.
      const toNew = (await inject('POST', members, owner.headers, { email: 'robert@example.com', role: 'viewer' })).json();
      assert.equal((await inject('PATCH', `/api/users/${bob.id}`, admin, { email: 'robert@example.com' })).statusCode, 200);
      assert.deepEqual((await inject('GET', '/api/me/invitations', bob.headers)).json().items.map((i: { id: string }) => i.id), [toNew.id]);

      // Invitations lapse after 30 days (web sessions after 7: everyone signs in again).
      clock.advance(31 * 86_400_000);
      const [robert, olga] = [await login('robert@example.com'), await login('olga@example.com')];
      admin = await login('root@example.com');
      assert.deepEqual((await inject('GET', '/api/me/invitations', robert)).json().items, []);
      assert.equal((await inject('POST', `/api/me/invitations/${toNew.id}/accept`, robert)).statusCode, 404);
      assert.deepEqual((await inject('GET', pending, olga)).json().items, []);
    });

    test('the invitation and address-proof operations are documented with their schemas', async () => {
      const doc = (await r.service.app.inject({ method: 'GET', url: '/api/docs/json' })).json();
      const op = (path: string, method: string) => doc.paths[path]?.[method];
      const expected: [string, string, string, string][] = [
        ['/api/projects/{id}/members', 'post', 'addProjectMember', '202'],
        ['/api/projects/{id}/invitations', 'get', 'listProjectInvitations', '200'],
        ['/api/projects/{id}/invitations/{invitationId}', 'delete', 'cancelProjectInvitation', '204'],
        ['/api/me/invitations', 'get', 'listMyInvitations', '200'],
        ['/api/me/invitations/{id}/accept', 'post', 'acceptInvitation', '200'],
        ['/api/me/invitations/{id}', 'delete', 'declineInvitation', '204'],
        ['/api/me/email/confirm', 'post', 'confirmEmail', '200'],
      ];
      for (const [path, method, operationId, status] of expected) {
        assert.equal(op(path, method)?.operationId, operationId, `${method} ${path}`);
        assert.ok(op(path, method).responses[status], `${method} ${path} documents ${status}`);
      }
      const invitation = op('/api/projects/{id}/members', 'post').responses['202'].content['application/json'].schema;
      assert.deepEqual(Object.keys(invitation.properties).sort(), ['createdAt', 'emailHint', 'expiresAt', 'id', 'invitedBy', 'projectId', 'projectName', 'role']);
      assert.ok(op('/api/me', 'patch').responses['200'].content['application/json'].schema.properties.pendingEmail);
      assert.ok(op('/api/users/{id}', 'patch').requestBody.content['application/json'].schema.properties.email, 'administrators set addresses');
    });

    test(`a project holds at most ${MAX_PENDING_INVITATIONS} pending invitations`, async () => {
      const projectId = await createProject(admin, 'Crowded');
      const invite = (i: number) => inject('POST', `/api/projects/${projectId}/members`, admin, { email: `guest${i}@example.com`, role: 'viewer' });
      for (let i = 0; i < MAX_PENDING_INVITATIONS; i++) assert.equal((await invite(i)).statusCode, 202);
      const over = await invite(MAX_PENDING_INVITATIONS);
      assert.deepEqual([over.statusCode, over.json().code], [409, 'too_many_invitations']);
      assert.equal((await invite(0)).statusCode, 202, 'renewing one still works');
      assert.equal((await inject('GET', `/api/projects/${projectId}/invitations`, admin)).json().items.length, MAX_PENDING_INVITATIONS);
    });
  });

  describe(`a new address with mail: in effect once proven (${target.name})`, () => {
    let dbh: { url: string; drop(): Promise<void> };
    let r: TestRunner;
    const mail: { to: string; subject: string; text: string }[] = [];

    before(async () => {
      dbh = await target.create();
      r = await startRunner({ databaseUrl: dbh.url, emailSender: { send: async (m) => void mail.push(m) } });
    });
    after(async () => {
      await r.close();
      await dbh.drop();
    });

    test('the link mailed to the new address changes it for the account that asked, once', async () => {
      const inject = (method: 'GET' | 'POST' | 'PATCH', url: string, headers: Headers, payload?: object) =>
        r.service.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
      const admin = bearer((await inject('POST', '/api/setup', {}, { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD })).json().session.token);
      const user = async (email: string) => {
        assert.equal((await inject('POST', '/api/users', admin, { email, password: PASSWORD })).statusCode, 201);
        return bearer((await inject('POST', '/api/auth/login', {}, { email, password: PASSWORD })).json().token);
      };
      const ann = await user('ann@example.com');
      const ben = await user('ben@example.com');

      const asked = await inject('PATCH', '/api/me', ann, { email: 'ann@new.example.com' });
      assert.equal(asked.statusCode, 200, asked.body);
      assert.deepEqual([asked.json().email, asked.json().pendingEmail], ['ann@example.com', 'ann@new.example.com']);
      assert.equal((await inject('GET', '/api/me', ann)).json().email, 'ann@example.com', 'not in effect before the proof');
      assert.equal(mail.length, 1);
      assert.equal(mail[0]!.to, 'ann@new.example.com');
      const token = /\/account\/email#token=(rnr_emp_\w+)/.exec(mail[0]!.text)?.[1];
      assert.ok(token, mail[0]!.text);

      assert.equal((await inject('POST', '/api/me/email/confirm', ben, { token })).statusCode, 404, "another account cannot use ann's link");
      const confirmed = await inject('POST', '/api/me/email/confirm', ann, { token });
      assert.equal(confirmed.statusCode, 200, confirmed.body);
      assert.equal(confirmed.json().email, 'ann@new.example.com');
      assert.equal((await inject('GET', '/api/me', ann)).json().email, 'ann@new.example.com');
      assert.equal((await inject('POST', '/api/me/email/confirm', ann, { token })).statusCode, 404, 'used once');

      // The address is not checked when asked (that would tell who has an account), only when proven.
      assert.equal((await inject('PATCH', '/api/me', ben, { email: 'carl@example.com' })).statusCode, 200);
      await user('carl@example.com');
      const late = await inject('POST', '/api/me/email/confirm', ben, { token: /#token=(\S+)/.exec(mail[1]!.text)![1] });
      assert.deepEqual([late.statusCode, late.json().code], [409, 'email_taken']);
      assert.equal((await inject('GET', '/api/me', ben)).json().email, 'ben@example.com');
    });
  });
}
