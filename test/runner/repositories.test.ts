import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { randomUUID } from '../../src/infra/secrets.js';
import { OAuthTokensRepository, PersonalTokensRepository } from '../../src/runner/auth/repository.js';
import { isUniqueViolation, openRunnerDatabase, type RunnerDatabase } from '../../src/runner/db/index.js';
import { ExecutorsRepository } from '../../src/runner/executors/repository.js';
import { ProjectsRepository } from '../../src/runner/projects/repository.js';
import { MAX_ATTEMPTS } from '../../src/runner/runs/leases-repository.js';
import { RunsRepository } from '../../src/runner/runs/repository.js';
import type { RunRow } from '../../src/runner/runs/run-rows.js';
import { UsersRepository } from '../../src/runner/users/repository.js';
import { WorkflowsRepository } from '../../src/runner/workflows/repository.js';
import { dialects } from '../helpers/db.js';

const T0 = '2030-01-01T00:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

for (const target of dialects()) {
  describe(`runner repositories (${target.name})`, () => {
    let handle: { url: string; drop(): Promise<void> };
    let database: RunnerDatabase;
    let users: UsersRepository;
    let projects: ProjectsRepository;
    let workflows: WorkflowsRepository;
    let runs: RunsRepository;
    let executors: ExecutorsRepository;

    before(async () => {
      handle = await target.create();
      database = await openRunnerDatabase(handle.url);
      // Opening again runs the migrations again: they must be idempotent at start-up.
      await (await openRunnerDatabase(handle.url)).close();
      const { db } = database;
      users = new UsersRepository(db);
      projects = new ProjectsRepository(db);
      workflows = new WorkflowsRepository(db);
      runs = new RunsRepository(db, database.dialect);
      executors = new ExecutorsRepository(db);
    });
    after(async () => {
      await database.close();
      await handle.drop();
    });

    const newUser = (email: string, role: 'admin' | 'member' = 'member') =>
      users.insert({ id: randomUUID(), email, name: email, passwordHash: 'h', role, now: T0 });

    test('users: emails are normalised and unique', async () => {
      const u = await newUser('  Alice@Example.COM ');
      assert.equal(u.email, 'alice@example.com');
      assert.equal((await users.findByEmail('ALICE@example.com'))?.id, u.id);
      await assert.rejects(newUser('alice@example.com'), (e) => isUniqueViolation(e));
      const updated = await users.setPassword(u.id, 'h2', at(1));
      assert.equal(updated?.user.session_epoch, 1);
      assert.equal(updated?.user.password_hash, 'h2');
    });

    test('users: only one first admin, even when racing', async () => {
      const fresh = await target.create();
      const d = await openRunnerDatabase(fresh.url);
      try {
        const repo = new UsersRepository(d.db);
        const results = await Promise.allSettled(
          [0, 1, 2, 3].map((i) => repo.insertFirstAdmin({ id: randomUUID(), email: `a${i}@x.io`, name: 'a', passwordHash: 'h', role: 'admin', now: T0 })),
        );
        const created = results.filter((r) => r.status === 'fulfilled' && r.value !== null);
        assert.equal(created.length, 1);
        assert.equal(await repo.count(), 1);
        assert.equal(await repo.insertFirstAdmin({ id: randomUUID(), email: 'late@x.io', name: 'a', passwordHash: 'h', role: 'admin', now: T0 }), null);
      } finally {
        await d.close();
        await fresh.drop();
      }
    });

    test('tokens: lookup by hash, revoke, last-use window', async () => {
      const u = await newUser('tok@example.com');
      const pats = new PersonalTokensRepository(database.db);
      await pats.insert({ id: 't1', user_id: u.id, name: 'n', scope: 'read', token_hash: 'hash-1', token_hint: 'abcd', created_at: T0, expires_at: null });
      await assert.rejects(
        pats.insert({ id: 't2', user_id: u.id, name: 'n', scope: 'read', token_hash: 'hash-1', token_hint: 'abcd', created_at: T0, expires_at: null }),
        (e) => isUniqueViolation(e),
      );
      assert.equal((await pats.findByHash('hash-1'))?.id, 't1');
      await pats.touch('t1', at(0), '1.1.1.1', at(-30_000));
      await pats.touch('t1', at(10_000), '2.2.2.2', at(-20_000));
      assert.equal((await pats.findByHash('hash-1'))?.last_used_ip, '1.1.1.1');
      await pats.touch('t1', at(31_000), '3.3.3.3', at(1_000));
      assert.equal((await pats.findByHash('hash-1'))?.last_used_at, at(31_000));
      assert.equal((await pats.listForUser(u.id)).length, 1);
      assert.equal(await pats.revoke('someone-else', 't1', at(1)), false);
      assert.equal(await pats.revoke(u.id, 't1', at(1)), true);
      assert.equal(await pats.revoke(u.id, 't1', at(2)), false);
      assert.equal((await pats.findByHash('hash-1'))?.revoked_at, at(1));
      assert.equal((await pats.listForUser(u.id)).length, 0);
      const oauth = new OAuthTokensRepository(database.db);
      await oauth.insert({ id: 'o1', user_id: u.id, client_id: 'c', scope: 'write', token_hash: 'ohash', created_at: T0, expires_at: at(3600_000) });
      assert.equal((await oauth.findByHash('ohash'))?.scope, 'write');
      const found = await oauth.findWithUser('ohash');
      assert.deepEqual(found?.token, await oauth.findByHash('ohash'), 'the joined look-up reads the same row');
      assert.deepEqual(found?.user, await new UsersRepository(database.db).findById(u.id));
      assert.equal(await oauth.findWithUser('no-such-hash'), undefined);
      assert.equal(await oauth.revoke('o1', at(1)), true);
      assert.equal((await oauth.findWithUser('ohash'))?.token.revoked_at, at(1));
    });

    test('projects: membership roles and the last owner', async () => {
      const owner = await newUser('owner@example.com');
      const other = await newUser('other@example.com');
      const p = await projects.create({ id: randomUUID(), name: 'Zeta', description: '', ownerId: owner.id, now: T0 });
      assert.equal(await projects.roleOf(p.id, owner.id), 'owner');
      assert.equal(await projects.roleOf(p.id, other.id), null);
      assert.deepEqual((await projects.list(other.id, false)).map((x) => x.id), []);
      // An administrator sees it without a role; the owner sees their role and the counts.
      assert.deepEqual(
        (await projects.list(other.id, true)).filter((x) => x.id === p.id).map((x) => [x.role, x.workflow_count, x.member_count, x.run_count]),
        [[null, 0, 1, 0]],
      );
      assert.deepEqual((await projects.list(owner.id, false)).map((x) => [x.name, x.role, typeof x.member_count]), [['Zeta', 'owner', 'number']]);
      assert.equal(await projects.setRole(p.id, owner.id, 'editor', T0), false, 'last owner cannot be demoted');
      assert.equal(await projects.removeMember(p.id, owner.id), 'last_owner');
      assert.equal(await projects.setRole(p.id, other.id, 'owner', T0), true);
      assert.equal(await projects.setRole(p.id, owner.id, 'viewer', T0), true);
      assert.deepEqual((await projects.members(p.id)).map((m) => [m.email, m.role]), [['other@example.com', 'owner'], ['owner@example.com', 'viewer']]);
      assert.equal(await projects.removeMember(p.id, owner.id), 'removed');
      assert.equal(await projects.removeMember(p.id, owner.id), 'absent');
      assert.deepEqual((await projects.list(other.id, false)).map((x) => [x.name, x.role, x.member_count]), [['Zeta', 'owner', 1]]);
    });

    test('projects: two owners demoting each other at once leave one owner (no write skew)', async () => {
      for (let i = 0; i < 30; i++) {
        const a = await newUser(`skew-a${i}@example.com`);
        const b = await newUser(`skew-b${i}@example.com`);
        const p = await projects.create({ id: randomUUID(), name: `skew${i}`, description: '', ownerId: a.id, now: T0 });
        await projects.setRole(p.id, b.id, 'owner', T0);
        const [ra, rb] = await Promise.all([projects.setRole(p.id, a.id, 'editor', T0), projects.removeMember(p.id, b.id)]);
        const owners = (await projects.members(p.id)).filter((m) => m.role === 'owner');
        assert.equal(owners.length, 1, `round ${i}: ${ra} ${rb}`);
      }
    });

    test('users: deleting the only owner of a project or the last admin is refused, even when racing', async () => {
      const solo = await newUser('solo@example.com');
      const co = await newUser('co@example.com');
      const p = await projects.create({ id: randomUUID(), name: 'solo', description: '', ownerId: solo.id, now: T0 });
      assert.deepEqual(await users.delete(solo.id), { soleOwnerOf: [p.id] });
      assert.equal(await projects.roleOf(p.id, solo.id), 'owner', 'nothing was deleted');
      await projects.setRole(p.id, co.id, 'owner', T0);
      // The co-owner is demoted while the first owner is deleted: one of the two must lose.
      const [demoted, deleted] = await Promise.all([projects.setRole(p.id, co.id, 'viewer', T0), users.delete(solo.id)]);
      const owners = (await projects.members(p.id)).filter((m) => m.role === 'owner');
      assert.equal(owners.length, 1, `${demoted} ${JSON.stringify(deleted)}`);
      assert.equal(await users.delete(randomUUID()), 'absent');
      for (let i = 0; i < 10; i++) {
        const x = await newUser(`admin-x${i}@example.com`, 'admin');
        const y = await newUser(`admin-y${i}@example.com`, 'admin');
        const others = (await users.list()).filter((u) => u.role === 'admin' && u.id !== x.id && u.id !== y.id);
        for (const o of others) await users.update(o.id, { role: 'member' }, T0);
        const [rx, ry] = await Promise.all([users.update(x.id, { role: 'member' }, T0), users.delete(y.id)]);
        assert.equal((await users.countAdmins()), 1, `round ${i}: ${JSON.stringify(rx)} ${JSON.stringify(ry)}`);
        await users.update(x.id, { role: 'admin' }, T0);
        if (ry === 'deleted') continue;
        await users.update(y.id, { role: 'member' }, T0);
      }
    });

    let projectId: string;
    let workflowId: string;
    const run = (extra: Partial<RunRow> = {}): Omit<RunRow, 'log_ack' | 'handbacks'> => ({
      id: randomUUID(), project_id: projectId, workflow_id: workflowId, workflow_version: 1, status: 'queued', parameters: '{}',
      created_by: null, created_at: T0, started_at: null, finished_at: null, attempt: 0, executor_id: null, required_labels: '[]', schedule_id: null, lease_hash: null,
      lease_expires_at: null, exit_code: null, error: null, ...extra,
    });

    test('workflows: versions are numbered without gaps, even when racing', async () => {
      const owner = await newUser('wf@example.com');
      projectId = (await projects.create({ id: randomUUID(), name: 'wf', description: '', ownerId: owner.id, now: T0 })).id;
      workflowId = randomUUID();
      const file = { file_name: 'a.knwf', size: 10, sha256: 'x'.repeat(64), storage_key: 'k', created_by: null, created_at: T0 };
      await workflows.create({ id: workflowId, project_id: projectId, name: 'w', description: '', created_by: null, created_at: T0, updated_at: T0 }, file);
      const add = () => workflows.addNextVersion({ ...file, workflow_id: workflowId }, T0);
      const added = await Promise.all([add(), add(), add(), add()]);
      assert.deepEqual(added.map((v) => v?.version).sort(), [2, 3, 4, 5]);
      assert.equal(await workflows.addNextVersion({ ...file, workflow_id: randomUUID() }, T0), undefined, 'no workflow, no version');
      assert.deepEqual((await workflows.versions(workflowId)).map((v) => v.version), [5, 4, 3, 2, 1]);
      assert.equal((await workflows.findById(workflowId))?.latest_version, 5);
    });

    test('runs: concurrent claims never hand out the same run', async () => {
      const exIds: string[] = [];
      for (let i = 0; i < 6; i++) {
        const id = randomUUID();
        exIds.push(id);
        await executors.insert({ id, name: `e${i}`, labels: '[]', capacity: 1, draining: 0, created_at: T0, last_heartbeat_at: T0, last_ip: null });
      }
      const queued = [];
      for (let i = 0; i < 4; i++) queued.push(await runs.create(run({ created_at: at(i) })));
      const outcomes = await Promise.all(exIds.map((e, i) => runs.claim(e, '127.0.0.1', `lease-${i}`, at(120_000), at(1000))));
      const got = outcomes.map((o) => (typeof o === 'object' ? o.run : null)).filter((c) => c !== null);
      assert.equal(outcomes.filter((o) => o === 'nothing-queued').length, 2);
      assert.equal(got.length, 4);
      assert.equal(new Set(got.map((c) => c!.id)).size, 4);
      assert.deepEqual(new Set(got.map((c) => c!.id)), new Set(queued.map((q) => q.id)));
      for (const c of got) {
        assert.equal(c!.status, 'running');
        assert.equal(c!.attempt, 1);
      }
      // Finish them, so later tests find an empty queue.
      for (const [i, o] of outcomes.entries()) {
        if (typeof o === 'object') await runs.complete(o.run.id, { hash: `lease-${i}`, attempt: 1 }, { status: 'succeeded', exitCode: 0, error: null }, at(2000));
      }
    });

    test('runs: leases fence, expire, requeue, then fail as executor lost', async () => {
      const ex = randomUUID();
      await executors.insert({ id: ex, name: 'lease', labels: '[]', capacity: 5, draining: 0, created_at: T0, last_heartbeat_at: T0, last_ip: null });
      const r = await runs.create(run({ created_at: at(-1) }));
      const take = async (hash: string, now: number) => {
        const o = await runs.claim(ex, '127.0.0.1', hash, at(now + 60_000), at(now));
        return typeof o === 'object' ? o.run : null;
      };
      let claimed = await take('L1', 0);
      assert.equal(claimed?.id, r.id);
      assert.ok(await runs.leased(r.id, { hash: 'L1', attempt: 1 }));
      assert.equal(await runs.leased(r.id, { hash: 'other', attempt: 1 }), null);
      for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
        assert.ok((await runs.sweepExpiredLeases(at(attempt * 100_000), MAX_ATTEMPTS)).requeued.includes(r.id));
        assert.equal((await runs.findById(r.id))?.status, 'queued');
        assert.equal(await runs.leased(r.id, { hash: `L${attempt}`, attempt }), null, 'the old lease no longer holds');
        claimed = await take(`L${attempt + 1}`, attempt * 100_000);
        assert.equal(claimed?.attempt, attempt + 1);
      }
      assert.ok((await runs.sweepExpiredLeases(at(10_000_000), MAX_ATTEMPTS)).failed.includes(r.id));
      const lost = await runs.findById(r.id);
      assert.equal(lost?.status, 'failed');
      assert.equal(lost?.error, 'executor lost');
      assert.equal(await runs.complete(r.id, { hash: `L${MAX_ATTEMPTS}`, attempt: MAX_ATTEMPTS }, { status: 'succeeded', exitCode: 0, error: null }, at(1)), null);
    });

    test('runs: labels, capacity (running + cancelling) and draining decide what an executor claims', async () => {
      const ex = randomUUID();
      await executors.insert({ id: ex, name: 'gpu', labels: '["linux","gpu"]', capacity: 2, draining: 0, created_at: T0, last_heartbeat_at: T0, last_ip: null });
      const other = randomUUID();
      await executors.insert({ id: other, name: 'plain', labels: '["linux"]', capacity: 5, draining: 0, created_at: T0, last_heartbeat_at: T0, last_ip: null });
      const win = await runs.create(run({ created_at: at(-300), required_labels: '["windows"]' }));
      const gpu = await runs.create(run({ created_at: at(-200), required_labels: '["gpu","linux"]' }));
      const any = await runs.create(run({ created_at: at(-100) }));
      const pick = async (e: string) => {
        const o = await runs.claim(e, '::1', randomUUID(), at(60_000), at(0));
        return typeof o === 'object' ? o.run.id : o;
      };
      assert.equal(await pick(other), any.id, 'skips runs needing labels it lacks');
      assert.equal(await pick(other), 'nothing-queued');
      assert.equal(await pick(ex), gpu.id);
      assert.equal(await runs.cancel(gpu.id, at(1)).then((x) => x?.status), 'cancelling');
      const extra = await runs.create(run({ created_at: at(-50) }));
      assert.equal(await pick(ex), extra.id);
      assert.equal(await pick(ex), 'at-capacity', 'the run being cancelled still counts');
      await executors.setDraining(other, true);
      assert.equal(await pick(other), 'draining');
      assert.equal(await pick(randomUUID()), 'unknown-executor');
      assert.equal((await runs.findById(win.id))?.status, 'queued');
      await runs.cancel(win.id, at(2));
    });

    test('runs: logs are idempotent by sequence, per attempt, and acknowledged up to the first gap', async () => {
      const ex = randomUUID();
      await executors.insert({ id: ex, name: 'logs', labels: '[]', capacity: 5, draining: 0, created_at: T0, last_heartbeat_at: T0, last_ip: null });
      const r = await runs.create(run({ created_at: at(-10_000) }));
      const o = await runs.claim(ex, '::1', 'LL', at(60_000), at(0));
      assert.ok(typeof o === 'object' && o.run.id === r.id);
      const lease = { hash: 'LL', attempt: 1 };
      assert.deepEqual(await runs.appendLogs(r.id, lease, [{ seq: 1, text: 'a' }, { seq: 2, text: 'b' }], T0), { ack: 2 });
      assert.deepEqual(await runs.appendLogs(r.id, lease, [{ seq: 4, text: 'd' }], T0), { ack: 2 });
      assert.deepEqual(await runs.appendLogs(r.id, lease, [{ seq: 2, text: 'CHANGED' }, { seq: 3, text: 'c' }], T0), { ack: 4 });
      assert.equal(await runs.appendLogs(r.id, lease, [{ seq: 4 + 10_001, text: 'far' }], T0), 'out-of-window');
      assert.equal(await runs.appendLogs(r.id, { hash: 'other', attempt: 1 }, [{ seq: 5, text: 'x' }], T0), 'stale-lease');
      assert.deepEqual((await runs.logs(r.id, { attempt: 1, seq: 0 }, 10)).map((l) => l.text), ['a', 'b', 'c', 'd']);
      assert.deepEqual((await runs.logs(r.id, { attempt: 1, seq: 2 }, 1)).map((l) => l.seq), [3]);
      assert.equal((await runs.findById(r.id))?.log_ack, 4);
      await runs.complete(r.id, lease, { status: 'succeeded', exitCode: 0, error: null }, at(1));
    });

    test('runs: parallel appends to one run never move the acknowledged sequence back', async () => {
      const ex = randomUUID();
      await executors.insert({ id: ex, name: 'par', labels: '[]', capacity: 5, draining: 0, created_at: T0, last_heartbeat_at: T0, last_ip: null });
      const r = await runs.create(run({ created_at: at(-20_000) }));
      await runs.claim(ex, '::1', 'PP', at(60_000), at(0));
      const lease = { hash: 'PP', attempt: 1 };
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => runs.appendLogs(r.id, lease, [{ seq: 20 - i, text: `line ${20 - i}` }], T0)),
      );
      assert.ok(results.every((x) => typeof x === 'object'));
      assert.equal((await runs.findById(r.id))?.log_ack, 20);
      assert.deepEqual(await runs.appendLogs(r.id, lease, [], T0), { ack: 20 });
      await runs.complete(r.id, lease, { status: 'succeeded', exitCode: 0, error: null }, at(1));
    });

    test('runs: keyset pagination lists every run once, newest first', async () => {
      const u = await newUser('pager@example.com');
      const p = await projects.create({ id: randomUUID(), name: 'pager', description: '', ownerId: u.id, now: T0 });
      const ids: string[] = [];
      for (let i = 0; i < 7; i++) ids.push((await runs.create(run({ project_id: p.id, created_at: at(Math.floor(i / 2) * 1000) }))).id);
      const seen: string[] = [];
      let after: { createdAt: string; id: string } | undefined;
      for (;;) {
        const page = await runs.list({ memberUserId: u.id, projectId: p.id, limit: 3, after });
        seen.push(...page.map((x) => x.id));
        const last = page[page.length - 1];
        if (page.length < 3 || !last) break;
        after = { createdAt: last.created_at, id: last.id };
      }
      assert.equal(seen.length, 7);
      assert.deepEqual(new Set(seen), new Set(ids));
      assert.deepEqual((await runs.list({ memberUserId: randomUUID(), limit: 100 })).length, 0, 'non-members see nothing');
      const cancelled = await runs.cancel(ids[0]!, at(5));
      assert.equal(cancelled?.status, 'cancelled');
      assert.equal(await runs.cancel(ids[0]!, at(6)), null);
      assert.deepEqual((await runs.list({ memberUserId: null, status: 'cancelled', projectId: p.id, limit: 10 })).map((x) => x.id), [ids[0]]);
    });

    test('deleting a project cascades to workflows and runs', async () => {
      const u = await newUser('cascade@example.com');
      const p = await projects.create({ id: randomUUID(), name: 'c', description: '', ownerId: u.id, now: T0 });
      const wid = randomUUID();
      await workflows.create(
        { id: wid, project_id: p.id, name: 'w', description: '', created_by: null, created_at: T0, updated_at: T0 },
        { file_name: 'a', size: 1, sha256: 's', storage_key: 'k', created_by: null, created_at: T0 },
      );
      const r = await runs.create(run({ project_id: p.id, workflow_id: wid }));
      await database.db.insertInto('run_logs').values({ run_id: r.id, attempt: 1, seq: 1, text: 'x', created_at: T0 }).execute();
      assert.deepEqual(await projects.delete(p.id), { workflowIds: [wid], runIds: [r.id] });
      assert.equal(await workflows.findById(wid), undefined);
      assert.equal(await runs.findById(r.id), undefined);
      assert.deepEqual(await runs.logs(r.id, { attempt: 1, seq: 0 }, 10), []);
    });
  });
}
