import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { generateToken, randomUUID, sha256 } from '../../src/infra/secrets.js';
import {
  type Access,
  ADMIN_ONLY,
  EXECUTORS,
  EXECUTORS_READ,
  IDENTITY,
  LOGIN_LIMITS_ADMIN,
  PUBLIC,
  RUN_READ,
  RUN_WRITE,
  SESSION_ONLY,
  securityOf,
  USER_READ,
  USER_WRITE,
} from '../../src/runner/auth/access.js';
import { JwtSessions } from '../../src/runner/auth/jwt.js';
import { OAuthTokensRepository, PersonalTokensRepository } from '../../src/runner/auth/repository.js';
import { openRunnerDatabase, type RunnerDatabase } from '../../src/runner/db/index.js';
import { ExecutorsRepository } from '../../src/runner/executors/repository.js';
import { ProjectsRepository } from '../../src/runner/projects/repository.js';
import { addressHash, addressHint } from '../../src/runner/projects/invitations.js';
import { InvitationsRepository } from '../../src/runner/projects/invitations-repository.js';
import { LocalRunOutputStorage } from '../../src/runner/runs/output-storage.js';
import { RunsRepository } from '../../src/runner/runs/repository.js';
import type { RunRow } from '../../src/runner/runs/run-rows.js';
import { SchedulesRepository } from '../../src/runner/schedules/repository.js';
import { UsersRepository } from '../../src/runner/users/repository.js';
import { createUser } from '../../src/runner/users/service.js';
import { WorkflowsRepository } from '../../src/runner/workflows/repository.js';
import { LocalWorkflowStorage } from '../../src/runner/workflows/storage.js';
import { API_KEY, makeZip, multipart, startRunner, SETUP_TOKEN, storedJwtSecret, type TestRunner } from './helpers.js';

const PASSWORD = 'correct horse battery';

type PrincipalName = 'none' | 'invalid' | 'jwtAdmin' | 'jwtMember' | 'apiKey' | 'patRead' | 'patWrite' | 'oauthRead' | 'oauthWrite';
const PRINCIPALS: PrincipalName[] = ['none', 'invalid', 'jwtAdmin', 'jwtMember', 'apiKey', 'patRead', 'patWrite', 'oauthRead', 'oauthWrite'];

/**
 * The expected outcome, written out independently of src/runner/auth/access.ts `allows`:
 * no or invalid credentials → 401; valid credentials the route does not admit → 403.
 */
function expected(a: Access, p: PrincipalName, ok: number): number {
  if (a.public) return ok;
  if (p === 'none' || p === 'invalid') return 401;
  const admitted =
    (p === 'jwtAdmin' && (a.jwt === 'user' || a.jwt === 'admin')) ||
    (p === 'jwtMember' && a.jwt === 'user') ||
    (p === 'apiKey' && a.apiKey) ||
    ((p === 'patRead' || p === 'oauthRead') && a.token === 'read') ||
    ((p === 'patWrite' || p === 'oauthWrite') && (a.token === 'read' || a.token === 'write'));
  // The tokens here are a member's: a route for administrators refuses them after the scope check.
  const memberToken = p === 'patRead' || p === 'patWrite' || p === 'oauthRead' || p === 'oauthWrite';
  return admitted && !(a.admins && memberToken) ? ok : 403;
}

interface Fixture {
  projectId: string;
  workflowId: string;
  queuedRunId: string;
  finishedRunId: string;
  leased: { runId: string; token: string; attempt: number };
  executorId: string;
  victimId: string;
  victimEmail: string;
  editorId: string;
  ownTokenId: string;
  scheduleId: string;
  /** An invitation of the project to another address. */
  invitationId: string;
  /** An invitation to the caller's own address. */
  ownInvitationId: string;
}

interface Request {
  payload?: unknown;
  headers?: Record<string, string>;
  /** A query string, from its `?`. */
  query?: string;
}

interface Case {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path as in the OpenAPI document. */
  path: string;
  access: Access;
  ok: number;
  request?: (f: Fixture) => Request;
}

const json = (payload: unknown) => () => ({ payload });
const upload = (withName: boolean) => () => {
  const m = multipart([...(withName ? [{ name: 'name', value: 'wf' }] : []), { name: 'file', file: makeZip() }]);
  return { payload: m.payload, headers: m.headers };
};

/** The permission table: every route of the API, the access it declares, its success status. */
const CASES: Case[] = [
  { method: 'GET', path: '/api/version', access: PUBLIC, ok: 200 },
  { method: 'POST', path: '/api/auth/login', access: PUBLIC, ok: 200, request: json({ email: 'member@example.com', password: PASSWORD }) },
  { method: 'POST', path: '/api/auth/logout', access: SESSION_ONLY, ok: 204 },
  { method: 'POST', path: '/api/setup', access: PUBLIC, ok: 409, request: json({ setupToken: SETUP_TOKEN, email: 'x@example.com', password: PASSWORD }) },
  { method: 'GET', path: '/api/me', access: IDENTITY, ok: 200 },
  { method: 'PATCH', path: '/api/me', access: SESSION_ONLY, ok: 200, request: json({ name: 'Renamed' }) },
  { method: 'PUT', path: '/api/me/password', access: SESSION_ONLY, ok: 200, request: json({ currentPassword: PASSWORD, newPassword: PASSWORD }) },
  // No address change waits for a proof here: passing the access check means 404 (the proof itself: account-addresses.test.ts).
  { method: 'POST', path: '/api/me/email/confirm', access: SESSION_ONLY, ok: 404, request: json({ token: 'rnr_emp_none' }) },
  { method: 'GET', path: '/api/me/invitations', access: SESSION_ONLY, ok: 200 },
  { method: 'POST', path: '/api/me/invitations/{id}/accept', access: SESSION_ONLY, ok: 200 },
  { method: 'DELETE', path: '/api/me/invitations/{id}', access: SESSION_ONLY, ok: 204 },
  { method: 'GET', path: '/api/tokens', access: SESSION_ONLY, ok: 200 },
  { method: 'POST', path: '/api/tokens', access: SESSION_ONLY, ok: 201, request: json({ name: 'ci', scope: 'read' }) },
  { method: 'DELETE', path: '/api/tokens/{id}', access: SESSION_ONLY, ok: 204 },
  { method: 'GET', path: '/api/connected-apps', access: SESSION_ONLY, ok: 200 },
  // No application is connected in this fixture: passing the access check means 404 here
  // (revocation itself: oauth-attacks.test.ts).
  { method: 'DELETE', path: '/api/connected-apps/{id}', access: SESSION_ONLY, ok: 404 },
  { method: 'GET', path: '/api/users', access: ADMIN_ONLY, ok: 200 },
  { method: 'POST', path: '/api/users', access: ADMIN_ONLY, ok: 201, request: () => ({ payload: { email: `u${randomUUID()}@example.com`, password: PASSWORD } }) },
  { method: 'GET', path: '/api/users/{id}', access: ADMIN_ONLY, ok: 200 },
  { method: 'PATCH', path: '/api/users/{id}', access: ADMIN_ONLY, ok: 200, request: json({ name: 'Victim' }) },
  { method: 'DELETE', path: '/api/users/{id}', access: ADMIN_ONLY, ok: 204 },
  { method: 'DELETE', path: '/api/login-limits/{email}', access: LOGIN_LIMITS_ADMIN, ok: 204 },
  { method: 'GET', path: '/api/projects', access: USER_READ, ok: 200 },
  { method: 'POST', path: '/api/projects', access: USER_WRITE, ok: 201, request: json({ name: 'New project' }) },
  { method: 'GET', path: '/api/projects/{id}', access: USER_READ, ok: 200 },
  { method: 'PATCH', path: '/api/projects/{id}', access: USER_WRITE, ok: 200, request: json({ description: 'changed' }) },
  { method: 'DELETE', path: '/api/projects/{id}', access: USER_WRITE, ok: 204 },
  { method: 'GET', path: '/api/projects/{id}/members', access: USER_READ, ok: 200 },
  // The victim is no member: the address is invited (202), as any address without membership.
  { method: 'POST', path: '/api/projects/{id}/members', access: USER_WRITE, ok: 202, request: (f) => ({ payload: { email: f.victimEmail, role: 'viewer' } }) },
  { method: 'GET', path: '/api/projects/{id}/invitations', access: USER_READ, ok: 200 },
  { method: 'DELETE', path: '/api/projects/{id}/invitations/{invitationId}', access: USER_WRITE, ok: 204 },
  { method: 'PUT', path: '/api/projects/{id}/members/{userId}', access: USER_WRITE, ok: 200, request: json({ role: 'viewer' }) },
  { method: 'DELETE', path: '/api/projects/{id}/members/{userId}', access: USER_WRITE, ok: 204 },
  { method: 'GET', path: '/api/projects/{id}/workflows', access: USER_READ, ok: 200 },
  { method: 'POST', path: '/api/projects/{id}/workflows', access: USER_WRITE, ok: 201, request: upload(true) },
  { method: 'GET', path: '/api/workflows/{id}', access: USER_READ, ok: 200 },
  { method: 'DELETE', path: '/api/workflows/{id}', access: USER_WRITE, ok: 204 },
  { method: 'GET', path: '/api/workflows/{id}/versions', access: USER_READ, ok: 200 },
  { method: 'POST', path: '/api/workflows/{id}/versions', access: USER_WRITE, ok: 201, request: upload(false) },
  { method: 'GET', path: '/api/workflows/{id}/versions/{version}/download', access: RUN_READ, ok: 200 },
  { method: 'POST', path: '/api/workflows/{id}/runs', access: USER_WRITE, ok: 201, request: json({ parameters: { rows: 10 } }) },
  { method: 'GET', path: '/api/workflows/{id}/schedules', access: USER_READ, ok: 200 },
  { method: 'POST', path: '/api/workflows/{id}/schedules', access: USER_WRITE, ok: 201, request: json({ cron: '0 * * * *', timeZone: 'Europe/Berlin' }) },
  { method: 'GET', path: '/api/schedules', access: USER_READ, ok: 200 },
  { method: 'GET', path: '/api/schedules/preview', access: USER_READ, ok: 200, request: () => ({ query: '?cron=30%206%20*%20*%20MON-FRI&timeZone=Europe%2FBerlin' }) },
  { method: 'GET', path: '/api/schedules/{id}', access: USER_READ, ok: 200 },
  { method: 'PATCH', path: '/api/schedules/{id}', access: USER_WRITE, ok: 200, request: json({ enabled: false }) },
  { method: 'DELETE', path: '/api/schedules/{id}', access: USER_WRITE, ok: 204 },
  { method: 'GET', path: '/api/runs', access: RUN_READ, ok: 200 },
  { method: 'GET', path: '/api/runs/{id}', access: RUN_READ, ok: 200 },
  { method: 'POST', path: '/api/runs/{id}/cancel', access: RUN_WRITE, ok: 200 },
  { method: 'POST', path: '/api/runs/{id}/rerun', access: USER_WRITE, ok: 201, request: json({ version: 'original' }) },
  { method: 'GET', path: '/api/runs/{id}/logs', access: RUN_READ, ok: 200 },
  { method: 'GET', path: '/api/runs/{id}/logs/stream', access: RUN_READ, ok: 200 },
  { method: 'GET', path: '/api/runs/{id}/outputs', access: RUN_READ, ok: 200 },
  { method: 'GET', path: '/api/runs/{id}/outputs/{name}', access: RUN_READ, ok: 200 },
  {
    method: 'PUT',
    path: '/api/runs/{id}/outputs/{name}',
    access: EXECUTORS,
    ok: 200,
    request: (f) => {
      const m = multipart([
        { name: 'leaseToken', value: f.leased.token },
        { name: 'attempt', value: String(f.leased.attempt) },
        { name: 'sha256', value: sha256('out') },
        { name: 'file', file: Buffer.from('out') },
      ]);
      return { payload: m.payload, headers: m.headers };
    },
  },
  {
    method: 'POST',
    path: '/api/runs/{id}/release',
    access: EXECUTORS,
    ok: 200,
    request: (f) => ({ payload: { leaseToken: f.leased.token, attempt: f.leased.attempt } }),
  },
  {
    method: 'POST',
    path: '/api/runs/{id}/logs',
    access: EXECUTORS,
    ok: 200,
    request: (f) => ({ payload: { leaseToken: f.leased.token, attempt: f.leased.attempt, chunks: [{ seq: 1, text: 'line' }] } }),
  },
  {
    method: 'POST',
    path: '/api/runs/{id}/complete',
    access: EXECUTORS,
    ok: 200,
    request: (f) => ({ payload: { leaseToken: f.leased.token, attempt: f.leased.attempt, status: 'succeeded', exitCode: 0 } }),
  },
  { method: 'POST', path: '/api/executors/register', access: EXECUTORS, ok: 201, request: json({ name: 'exec' }) },
  { method: 'POST', path: '/api/executors/{id}/register', access: EXECUTORS, ok: 200, request: json({ name: 'exec' }) },
  { method: 'POST', path: '/api/executors/{id}/heartbeat', access: EXECUTORS, ok: 200 },
  { method: 'POST', path: '/api/executors/{id}/claim', access: EXECUTORS, ok: 200 },
  { method: 'GET', path: '/api/executors', access: EXECUTORS_READ, ok: 200 },
  { method: 'GET', path: '/api/executors/{id}', access: EXECUTORS_READ, ok: 200 },
  { method: 'POST', path: '/api/executors/{id}/drain', access: EXECUTORS, ok: 200 },
  { method: 'DELETE', path: '/api/executors/{id}', access: EXECUTORS, ok: 204 },
];

/**
 * What each project-scoped route needs inside the project, written out independently of
 * src/runner/projects: viewers read, editors write, owners manage.
 */
const PROJECT_NEEDS: Record<string, 'read' | 'write' | 'manage'> = {
  'GET /api/projects/{id}': 'read',
  'PATCH /api/projects/{id}': 'write',
  'DELETE /api/projects/{id}': 'manage',
  'GET /api/projects/{id}/members': 'read',
  'POST /api/projects/{id}/members': 'manage',
  'PUT /api/projects/{id}/members/{userId}': 'manage',
  'DELETE /api/projects/{id}/members/{userId}': 'manage',
  'GET /api/projects/{id}/invitations': 'manage',
  'DELETE /api/projects/{id}/invitations/{invitationId}': 'manage',
  'GET /api/projects/{id}/workflows': 'read',
  'POST /api/projects/{id}/workflows': 'write',
  'GET /api/workflows/{id}': 'read',
  'DELETE /api/workflows/{id}': 'write',
  'GET /api/workflows/{id}/versions': 'read',
  'POST /api/workflows/{id}/versions': 'write',
  'GET /api/workflows/{id}/versions/{version}/download': 'read',
  'POST /api/workflows/{id}/runs': 'write',
  'GET /api/workflows/{id}/schedules': 'read',
  'POST /api/workflows/{id}/schedules': 'write',
  'GET /api/schedules/{id}': 'read',
  'PATCH /api/schedules/{id}': 'write',
  'DELETE /api/schedules/{id}': 'write',
  'GET /api/runs/{id}': 'read',
  'POST /api/runs/{id}/cancel': 'write',
  'POST /api/runs/{id}/rerun': 'write',
  'GET /api/runs/{id}/logs': 'read',
  'GET /api/runs/{id}/logs/stream': 'read',
  'GET /api/runs/{id}/outputs': 'read',
  'GET /api/runs/{id}/outputs/{name}': 'read',
};

type ProjectRoleName = 'owner' | 'editor' | 'viewer' | 'non-member';

function expectedForRole(need: 'read' | 'write' | 'manage', role: ProjectRoleName, ok: number): number {
  if (role === 'non-member') return 404; // project ids do not leak
  const allowed = { owner: ['read', 'write', 'manage'], editor: ['read', 'write'], viewer: ['read'] }[role];
  return allowed.includes(need) ? ok : 403;
}

/** Fills path parameters with the fixture's resource of the right kind. */
function resolvePath(path: string, f: Fixture, method = 'GET'): string {
  const idFor = (): string => {
    if (path.startsWith('/api/users/')) return f.victimId;
    if (path.startsWith('/api/me/invitations/')) return f.ownInvitationId;
    if (path.startsWith('/api/tokens/')) return f.ownTokenId;
    if (path.startsWith('/api/connected-apps/')) return 'rnr_cid_none';
    if (path.startsWith('/api/projects/')) return f.projectId;
    if (path.startsWith('/api/workflows/')) return f.workflowId;
    if (path.startsWith('/api/schedules/')) return f.scheduleId;
    if (path.startsWith('/api/executors/')) return f.executorId;
    if (method === 'POST' && ['/api/runs/{id}/logs', '/api/runs/{id}/complete', '/api/runs/{id}/release'].includes(path)) return f.leased.runId;
    if (method === 'PUT' && path === '/api/runs/{id}/outputs/{name}') return f.leased.runId;
    if (path === '/api/runs/{id}/cancel') return f.queuedRunId;
    if (path.startsWith('/api/runs/')) return f.finishedRunId;
    throw new Error(`no fixture for ${path}`);
  };
  return path
    .replace('{id}', path.includes('{id}') ? idFor() : '')
    .replace('{userId}', f.editorId)
    .replace('{invitationId}', f.invitationId)
    .replace('{email}', 'member@example.com')
    .replace('{name}', 'report.csv')
    .replace('{version}', '1');
}

describe('permission table: every route × every principal', () => {
  let r: TestRunner;
  let database: RunnerDatabase;
  let jwt: JwtSessions;
  let users: UsersRepository;
  let adminId: string;
  let memberId: string;
  const headers: Partial<Record<PrincipalName, string>> = {};
  let doc: { paths: Record<string, Record<string, { security?: unknown; 'x-pier-access'?: unknown }>> };

  before(async () => {
    r = await startRunner();
    database = await openRunnerDatabase(r.config.runner.databaseUrl);
    users = new UsersRepository(database.db);
    jwt = new JwtSessions(await storedJwtSecret(r), r.config.runner.url, r.clock.now);
    const now = r.clock.now();
    adminId = (await createUser(users, { email: 'admin@example.com', password: PASSWORD, role: 'admin' }, now)).id;
    memberId = (await createUser(users, { email: 'member@example.com', password: PASSWORD, role: 'member' }, now)).id;
    const pats = new PersonalTokensRepository(database.db);
    const oauth = new OAuthTokensRepository(database.db);
    for (const scope of ['read', 'write'] as const) {
      const pat = generateToken('rnr_pat_');
      await pats.insert({
        id: randomUUID(), user_id: memberId, name: scope, scope, token_hash: sha256(pat), token_hint: pat.slice(-4),
        created_at: now.toISOString(), expires_at: null,
      });
      const oat = generateToken('rnr_oat_');
      await oauth.insert({
        id: randomUUID(), user_id: memberId, client_id: 'test-client', scope, token_hash: sha256(oat),
        created_at: now.toISOString(), expires_at: new Date(now.getTime() + 3600_000).toISOString(),
      });
      headers[scope === 'read' ? 'patRead' : 'patWrite'] = `ApiKey ${pat}`;
      headers[scope === 'read' ? 'oauthRead' : 'oauthWrite'] = `ApiKey ${oat}`;
    }
    headers.apiKey = `ApiKey ${API_KEY}`;
    headers.invalid = 'Bearer not-a-jwt';
    const res = await r.service.app.inject({ method: 'GET', url: '/api/docs/json' });
    doc = res.json();
  });

  after(async () => {
    await database.close();
    await r.close();
  });

  /** Web sessions are re-issued per call: changing the password ends the previous ones. */
  async function authHeader(p: PrincipalName): Promise<string | undefined> {
    if (p === 'jwtAdmin' || p === 'jwtMember') {
      const u = await users.findById(p === 'jwtAdmin' ? adminId : memberId);
      return `Bearer ${(await jwt.issue(u!.id, u!.session_epoch)).token}`;
    }
    return headers[p];
  }

  /** Fresh resources for one call, owned by the member (so membership never decides the outcome). */
  async function fixture(p: PrincipalName): Promise<Fixture> {
    const db = database.db;
    const now = r.clock.now().toISOString();
    const projects = new ProjectsRepository(db);
    const workflows = new WorkflowsRepository(db);
    const runs = new RunsRepository(db, database.dialect);
    const storage = new LocalWorkflowStorage(r.config.runner.storageDir);
    const projectId = randomUUID();
    await projects.create({ id: projectId, name: 'p', description: '', ownerId: memberId, now });
    const editorId = (await users.insert({ id: randomUUID(), email: `e${randomUUID()}@example.com`, name: 'e', passwordHash: 'x', role: 'member', now })).id;
    await projects.setRole(projectId, editorId, 'editor', now);
    const workflowId = randomUUID();
    const file = await storage.save(workflowId, Readable.from([makeZip()]), () => false, 1e6);
    await workflows.create(
      { id: workflowId, project_id: projectId, name: 'wf', description: '', created_by: memberId, created_at: now, updated_at: now },
      { file_name: 'wf.knwf', size: file.size, sha256: file.sha256, storage_key: file.storageKey, created_by: memberId, created_at: now },
    );
    const run = (status: RunRow['status'], extra: Partial<RunRow> = {}): Omit<RunRow, 'log_ack' | 'handbacks'> => ({
      id: randomUUID(), project_id: projectId, workflow_id: workflowId, workflow_version: 1, status, parameters: '{}',
      created_by: memberId, created_at: now, started_at: null, finished_at: null, attempt: 0, executor_id: null, required_labels: '[]', schedule_id: null,
      lease_hash: null, lease_expires_at: null, exit_code: null, error: null, ...extra,
    });
    const queued = await runs.create(run('queued'));
    const finished = await runs.create(run('succeeded', { finished_at: now, attempt: 1 }));
    await db.insertInto('run_logs').values({ run_id: finished.id, attempt: 1, seq: 1, text: 'done', created_at: now }).execute();
    const stored = await new LocalRunOutputStorage(r.config.runner.storageDir).save(finished.id, 1, 'report.csv', Readable.from(['a,b\n']), 100);
    await db.insertInto('run_outputs').values({ run_id: finished.id, name: 'report.csv', ...stored, content_type: 'text/csv', created_at: now }).execute();
    const executorId = randomUUID();
    await new ExecutorsRepository(db).insert({
      id: executorId, name: 'x', labels: '[]', capacity: 2, draining: 0, created_at: now, last_heartbeat_at: now, last_ip: null,
    });
    const lease = generateToken('rnr_lease_');
    const leased = await runs.create(
      run('running', { attempt: 1, executor_id: executorId, lease_hash: sha256(lease), lease_expires_at: '2999-01-01T00:00:00.000Z' }),
    );
    const victimEmail = `v${randomUUID()}@example.com`;
    const victimId = (await users.insert({ id: randomUUID(), email: victimEmail, name: 'v', passwordHash: 'x', role: 'member', now })).id;
    const ownTokenId = randomUUID();
    await new PersonalTokensRepository(db).insert({
      id: ownTokenId, user_id: p === 'jwtAdmin' ? adminId : memberId, name: 'own', scope: 'read',
      token_hash: sha256(generateToken('rnr_pat_')), token_hint: 'xxxx', created_at: now, expires_at: null,
    });
    const scheduleId = randomUUID();
    await new SchedulesRepository(db).create({
      id: scheduleId, project_id: projectId, workflow_id: workflowId, name: '', cron: '0 * * * *', time_zone: 'UTC', enabled: 1,
      parameters: '{}', required_labels: '[]', workflow_version: null, overlap: 'skip', next_fire_at: '2999-01-01T00:00:00.000Z',
      last_fire_at: null, last_outcome: null, last_run_id: null, created_by: memberId, created_at: now, updated_at: now,
    });
    const invitations = new InvitationsRepository(db);
    const invite = async (email: string) => {
      const row = {
        id: randomUUID(), project_id: projectId, email_hash: addressHash(email), email_hint: addressHint(email), role: 'viewer' as const,
        invited_by: memberId, created_at: now, expires_at: '2999-01-01T00:00:00.000Z',
      };
      await invitations.put(row, now, 100);
      return row.id;
    };
    const invitationId = await invite(`i${randomUUID()}@example.com`);
    const ownInvitationId = await invite(p === 'jwtAdmin' ? 'admin@example.com' : 'member@example.com');
    return {
      projectId, workflowId, queuedRunId: queued.id, finishedRunId: finished.id,
      leased: { runId: leased.id, token: lease, attempt: 1 }, executorId, victimId, victimEmail, editorId, ownTokenId, scheduleId,
      invitationId, ownInvitationId,
    };
  }

  test('the table lists exactly the operations of the OpenAPI document, with the same access', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const tabled = CASES.map((c) => `${c.method} ${c.path}`);
    assert.deepEqual([...documented].sort(), [...tabled].sort());
    for (const c of CASES) {
      const op = doc.paths[c.path]?.[c.method.toLowerCase()];
      assert.ok(op, `${c.method} ${c.path} documented`);
      assert.deepEqual(op['x-pier-access'], { ...c.access }, `${c.method} ${c.path}: x-pier-access`);
      assert.deepEqual(op.security, securityOf(c.access), `${c.method} ${c.path}: security`);
    }
  });

  test('the OpenAPI security requirements say who is admitted', () => {
    // Spot checks against literal scheme names, independent of securityOf().
    assert.deepEqual(doc.paths['/api/tokens']?.post?.security, [{ jwt: [] }]);
    assert.deepEqual(doc.paths['/api/me']?.get?.security, [{ jwt: [] }, { personalAccessToken: ['read'] }, { oauthAccessToken: ['read'] }, { adminApiKey: [] }]);
    assert.deepEqual(doc.paths['/api/executors/{id}/claim']?.post?.security, [{ jwt: ['admin'] }, { adminApiKey: [] }]);
    assert.deepEqual(doc.paths['/api/runs/{id}/cancel']?.post?.security, [
      { jwt: [] }, { personalAccessToken: ['write'] }, { oauthAccessToken: ['write'] }, { adminApiKey: [] },
    ]);
    assert.deepEqual(doc.paths['/api/auth/login']?.post?.security, []);
  });

  test('every route with a project in its path is in the project-role table', () => {
    const scoped = CASES.filter((c) => /^\/api\/(projects|workflows|runs|schedules)\/\{id\}/.test(c.path) && c.access !== EXECUTORS)
      .map((c) => `${c.method} ${c.path}`);
    assert.deepEqual([...scoped].sort(), Object.keys(PROJECT_NEEDS).sort());
  });

  for (const [key, need] of Object.entries(PROJECT_NEEDS)) {
    test(`project roles: ${key} needs ${need}`, async () => {
      const found = CASES.find((x) => `${x.method} ${x.path}` === key);
      assert.ok(found, key);
      const c: Case = found;
      const results: string[] = [];
      for (const role of ['owner', 'editor', 'viewer', 'non-member'] as const) {
        const f = await fixture('jwtMember');
        const now = r.clock.now().toISOString();
        const caller = await users.insert({ id: randomUUID(), email: `${role}-${randomUUID()}@example.com`, name: role, passwordHash: 'x', role: 'member', now });
        if (role !== 'non-member') await new ProjectsRepository(database.db).setRole(f.projectId, caller.id, role, now);
        const req: Request = c.request?.(f) ?? {};
        const session = (await jwt.issue(caller.id, 0)).token;
        const res = await r.service.app.inject({
          method: c.method,
          url: resolvePath(c.path, f, c.method) + (req.query ?? ''),
          headers: { authorization: `Bearer ${session}`, ...req.headers },
          ...(req.payload !== undefined ? { payload: req.payload as string } : {}),
        });
        const want = expectedForRole(need, role, c.ok);
        if (res.statusCode !== want) results.push(`${role}: got ${res.statusCode}, want ${want} (${res.body.slice(0, 200)})`);
        if (res.statusCode === 403) assert.equal(res.json().code, 'project_role');
      }
      assert.deepEqual(results, []);
    });
  }

  test('project roles: lists show a non-member nothing of the project', async () => {
    const f = await fixture('jwtMember');
    const now = r.clock.now().toISOString();
    const outsider = await users.insert({ id: randomUUID(), email: `out-${randomUUID()}@example.com`, name: 'o', passwordHash: 'x', role: 'member', now });
    const auth = { authorization: `Bearer ${(await jwt.issue(outsider.id, 0)).token}` };
    const projectsRes = await r.service.app.inject({ method: 'GET', url: '/api/projects', headers: auth });
    assert.ok(!projectsRes.body.includes(f.projectId));
    const runsRes = await r.service.app.inject({ method: 'GET', url: `/api/runs?project=${f.projectId}`, headers: auth });
    assert.deepEqual(runsRes.json().items, []);
    const viewer = await users.insert({ id: randomUUID(), email: `v-${randomUUID()}@example.com`, name: 'v', passwordHash: 'x', role: 'member', now });
    await new ProjectsRepository(database.db).setRole(f.projectId, viewer.id, 'viewer', now);
    const viewerRuns = await r.service.app.inject({ method: 'GET', url: `/api/runs?project=${f.projectId}`, headers: { authorization: `Bearer ${(await jwt.issue(viewer.id, 0)).token}` } });
    assert.equal(viewerRuns.json().items.length, 3, 'control: a viewer sees the runs');
  });

  for (const c of CASES) {
    test(`${c.method} ${c.path}`, async () => {
      const results: string[] = [];
      for (const p of PRINCIPALS) {
        const f = await fixture(p);
        const req = c.request?.(f) ?? {};
        const auth = await authHeader(p);
        const res = await r.service.app.inject({
          method: c.method,
          url: resolvePath(c.path, f, c.method) + (req.query ?? ''),
          headers: { ...(auth ? { authorization: auth } : {}), ...req.headers },
          ...(req.payload !== undefined ? { payload: req.payload as string } : {}),
          // Rejected credentials are scored per address (auth/guard.ts); the table sends one
          // invalid credential per route, from an address of its own.
          remoteAddress: `10.200.${Math.floor(CASES.indexOf(c) / 250)}.${CASES.indexOf(c) % 250}`,
        });
        const want = expected(c.access, p, c.ok);
        if (res.statusCode !== want) results.push(`${p}: got ${res.statusCode}, want ${want} (${res.body.slice(0, 200)})`);
        if (res.statusCode === 401) {
          assert.equal(res.headers['www-authenticate'], 'Bearer realm="runner", resource_metadata="http://runner.test/.well-known/oauth-protected-resource", ApiKey realm="runner"');
        }
        if (res.statusCode >= 400) {
          assert.match(String(res.headers['content-type']), /^application\/problem\+json/);
          assert.equal(res.json().status, res.statusCode);
        }
      }
      assert.deepEqual(results, []);
    });
  }
});
