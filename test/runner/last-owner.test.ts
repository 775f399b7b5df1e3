import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearer, startRunner, SETUP_TOKEN } from './helpers.js';

const PASSWORD = 'a long enough password';

test('DELETE /api/users/{id} keeps every project owned (409 last_owner) and the last admin', async () => {
  const r = await startRunner();
  const inject = r.service.app.inject.bind(r.service.app);
  try {
    const admin = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json();
    const root = bearer(admin.session.token);
    const u = (await inject({ method: 'POST', url: '/api/users', headers: root, payload: { email: 'u@example.com', password: PASSWORD } })).json();
    const session = (await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'u@example.com', password: PASSWORD } })).json().token;
    const project = (await inject({ method: 'POST', url: '/api/projects', headers: bearer(session), payload: { name: 'Mine' } })).json();

    const refused = await inject({ method: 'DELETE', url: `/api/users/${u.id}`, headers: root });
    assert.equal(refused.statusCode, 409, refused.body);
    assert.equal(refused.json().code, 'last_owner');
    assert.match(refused.json().detail, new RegExp(project.id));
    assert.equal((await inject({ method: 'GET', url: `/api/projects/${project.id}/members`, headers: root })).json().items.length, 1, 'nothing was removed');

    const other = (await inject({ method: 'POST', url: '/api/users', headers: root, payload: { email: 'o@example.com', password: PASSWORD } })).json();
    await inject({ method: 'PUT', url: `/api/projects/${project.id}/members/${other.id}`, headers: root, payload: { role: 'owner' } });
    assert.equal((await inject({ method: 'DELETE', url: `/api/users/${u.id}`, headers: root })).statusCode, 204);
    const members = (await inject({ method: 'GET', url: `/api/projects/${project.id}/members`, headers: root })).json().items;
    assert.deepEqual(members.map((m: { email: string; role: string }) => [m.email, m.role]), [['o@example.com', 'owner']]);

    const demote = await inject({ method: 'PATCH', url: `/api/users/${admin.user.id}`, headers: root, payload: { role: 'member' } });
    assert.equal(demote.statusCode, 409);
    assert.equal(demote.json().code, 'last_admin');
  } finally {
    await r.close();
  }
});

test("an owner invites by email (owners cannot list users), changes a member's role the same way, and an unknown email is invited alike", async () => {
  const r = await startRunner();
  const inject = r.service.app.inject.bind(r.service.app);
  try {
    const admin = (await inject({ method: 'POST', url: '/api/setup', payload: { setupToken: SETUP_TOKEN, email: 'root@example.com', password: PASSWORD } })).json();
    const root = bearer(admin.session.token);
    for (const email of ['owner@example.com', 'colleague@example.com']) await inject({ method: 'POST', url: '/api/users', headers: root, payload: { email, password: PASSWORD } });
    const owner = bearer((await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'owner@example.com', password: PASSWORD } })).json().token);
    const project = (await inject({ method: 'POST', url: '/api/projects', headers: owner, payload: { name: 'Shared' } })).json();
    const url = `/api/projects/${project.id}/members`;

    // Adding by email invites the address; its holder accepts (account-addresses.test.ts has the rest).
    const invited = await inject({ method: 'POST', url, headers: owner, payload: { email: 'Colleague@Example.com', role: 'viewer' } });
    assert.equal(invited.statusCode, 202, invited.body);
    const colleague = bearer((await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'colleague@example.com', password: PASSWORD } })).json().token);
    assert.equal((await inject({ method: 'POST', url: `/api/me/invitations/${invited.json().id}/accept`, headers: colleague })).statusCode, 200);
    // A member's address changes their role at once.
    const added = await inject({ method: 'POST', url, headers: owner, payload: { email: 'colleague@example.com', role: 'editor' } });
    assert.equal(added.statusCode, 200, added.body);
    assert.deepEqual([added.json().email, added.json().role], ['colleague@example.com', 'editor']);
    const unknown = await inject({ method: 'POST', url, headers: owner, payload: { email: 'nobody@example.com', role: 'viewer' } });
    assert.equal(unknown.statusCode, 202, 'an address without an account is invited all the same');
    // The project list tells the caller's role and the counts.
    const listed = (await inject({ method: 'GET', url: '/api/projects', headers: owner })).json().items;
    assert.deepEqual(listed.map((p: { role: string; counts: object }) => [p.role, p.counts]), [['owner', { workflows: 0, members: 2, runs: 0 }]]);
    // A viewer cannot add anyone.
    const viewer = bearer((await inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'colleague@example.com', password: PASSWORD } })).json().token);
    await inject({ method: 'POST', url, headers: owner, payload: { email: 'colleague@example.com', role: 'viewer' } });
    assert.equal((await inject({ method: 'POST', url, headers: viewer, payload: { email: 'root@example.com', role: 'owner' } })).statusCode, 403);
  } finally {
    await r.close();
  }
});
