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
