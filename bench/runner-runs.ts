// The run list at 200,000 runs (the web UI's Runs screen), on SQLite and PostgreSQL, spread as in
// a busy runner: the member's big project holds 3 of 4 runs over 10 workflows, a second project of
// theirs every eighth, a project they are not in the rest. The median time of GET /api/runs (a
// member's JWT, so the membership filter applies) for the first page, a page deep in the list (a
// cursor at run 90,000), and the filters (status, who started it, schedule, a day, a workflow,
// a project and a status), each against the floor: the same page's query (runs/list-query.ts)
// run over a connection of its own. Target: every page under 25 ms at the median, and within 3x
// or 5 ms of the floor.
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../src/infra/config.js';
import { hashPassword, randomId, randomUUID } from '../src/infra/secrets.js';
import { openRunnerDatabase } from '../src/runner/db/index.js';
import { ProjectsRepository } from '../src/runner/projects/repository.js';
import { type RunListFilter, runListQuery } from '../src/runner/runs/list-query.js';
import { createRunnerService } from '../src/runner/service.js';
import { UsersRepository } from '../src/runner/users/repository.js';
import { WorkflowsRepository } from '../src/runner/workflows/repository.js';
import { createPostgresDatabase } from '../test/helpers/db.js';
import { tempDir } from './lib.js';
import { benchPostgres } from './postgres.js';

const RUNS = Number(process.env.BENCH_RUNS_LIST ?? 200_000);
const WORKFLOWS = 10;
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 40);
const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const PASSWORD = 'bench password long enough';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function timed(f: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  await f();
  for (let i = 0; i < SAMPLES; i++) {
    const t = performance.now();
    await f();
    times.push(performance.now() - t);
  }
  return median(times);
}

async function one(url: string, dataDir: string): Promise<string[]> {
  const database = await openRunnerDatabase(url);
  const { db } = database;
  const users = new UsersRepository(db);
  const member = await users.insert({ id: randomUUID(), email: `m${randomId()}@example.com`, name: 'm', passwordHash: await hashPassword(PASSWORD), role: 'member', now: new Date(T0).toISOString() });
  const other = await users.insert({ id: randomUUID(), email: `o${randomId()}@example.com`, name: 'o', passwordHash: 'x', role: 'member', now: new Date(T0).toISOString() });
  const projects = new ProjectsRepository(db);
  const project = async (owner: string) => (await projects.create({ id: randomUUID(), name: 'bench', description: '', ownerId: owner, now: new Date(T0).toISOString() })).id;
  const projectId = await project(member.id);
  const secondId = await project(member.id);
  const foreignId = await project(other.id);
  const workflow = async (project_id: string) => {
    const id = randomUUID();
    await new WorkflowsRepository(db).create(
      { id, project_id, name: 'w', description: '', created_by: null, created_at: new Date(T0).toISOString(), updated_at: new Date(T0).toISOString() },
      { file_name: 'w.knwf', size: 1, sha256: 'x'.repeat(64), storage_key: 'k', created_by: null, created_at: new Date(T0).toISOString() },
    );
    return id;
  };
  const workflows: string[] = [];
  for (let i = 0; i < WORKFLOWS; i++) workflows.push(await workflow(projectId));
  const workflowId = workflows[0]!;
  const secondWorkflow = await workflow(secondId);
  const foreignWorkflow = await workflow(foreignId);
  /** Where run i lives: 3 of 4 in the member's big project, every eighth in their second, the rest elsewhere. */
  const home = (i: number): [string, string] => (i % 8 === 3 ? [secondId, secondWorkflow] : i % 8 === 7 ? [foreignId, foreignWorkflow] : [projectId, workflows[i % WORKFLOWS]!]);
  const scheduleId = randomUUID();
  await db
    .insertInto('schedules')
    .values({
      id: scheduleId, project_id: projectId, workflow_id: workflowId, name: 's', cron: '0 6 * * *', time_zone: 'UTC', enabled: 0, parameters: '{}', required_labels: '[]',
      workflow_version: null, overlap: 'skip', next_fire_at: null, last_fire_at: null, last_outcome: null, last_run_id: null, created_by: null,
      created_at: new Date(T0).toISOString(), updated_at: new Date(T0).toISOString(),
    })
    .execute();
  const at = (i: number) => new Date(T0 + i * 60_000).toISOString();
  const rows = Array.from({ length: RUNS }, (_, i) => ({
    id: randomUUID(), project_id: home(i)[0], workflow_id: home(i)[1], workflow_version: 1, status: (i % 10 === 0 ? 'failed' : 'succeeded') as 'failed' | 'succeeded',
    parameters: '{"rows":10}', created_by: i % 100 === 0 ? member.id : i % 200 === 1 ? null : other.id, created_at: at(i), started_at: at(i), finished_at: at(i),
    attempt: 1, executor_id: null, lease_hash: null, lease_expires_at: null, exit_code: 0, error: null, required_labels: '[]',
    schedule_id: i % 200 === 1 && home(i)[0] === projectId ? scheduleId : null, log_ack: 0,
  }));
  for (let i = 0; i < rows.length; i += 500) await db.insertInto('runs').values(rows.slice(i, i + 500)).execute();
  if (database.dialect === 'postgres') await sql`ANALYZE`.execute(db);
  else await sql`ANALYZE`.execute(db);
  await database.close();

  const config = loadConfig({ PIER_DATA_DIR: dataDir, PIER_LOG_LEVEL: 'silent', RUNNER_URL: 'http://127.0.0.1', RUNNER_DATABASE_URL: url, RUNNER_STORAGE_DIR: path.join(dataDir, 's') });
  const service = await createRunnerService(config, {});
  const floorDb = await openRunnerDatabase(url);
  const lines: string[] = [];
  try {
    const token = (await service.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: member.email, password: PASSWORD } })).json().token as string;
    const deep = rows[RUNS - 90_000]!;
    const cursor = Buffer.from(JSON.stringify([deep.created_at, deep.id])).toString('base64url');
    const day = at(RUNS - 5000).slice(0, 10);
    const mine = [projectId, secondId].sort();
    const cases: [string, string, Partial<RunListFilter>][] = [
      ['first page', '', {}],
      ['a page at run 90,000', `&cursor=${cursor}`, { after: { createdAt: deep.created_at, id: deep.id } }],
      ['status=failed', '&status=failed', { status: 'failed' }],
      ['startedBy=me (1 %)', '&startedBy=me', { createdBy: member.id }],
      ['schedule (0.4 %)', `&schedule=${scheduleId}`, { scheduleId }],
      ['one day', `&since=${day}&until=${day}T23:59:59Z`, { since: `${day}T00:00:00.000Z`, until: `${day}T23:59:59.000Z` }],
      ['a workflow', `&workflow=${workflowId}`, { workflowId }],
      ['project + failed', `&project=${projectId}&status=failed`, { projectId, status: 'failed' }],
    ];
    for (const [name, query, f] of cases) {
      const ours = await timed(async () => {
        const res = await service.app.inject({ method: 'GET', url: `/api/runs?limit=50${query}`, headers: { authorization: `Bearer ${token}` } });
        if (res.statusCode !== 200 || res.json().items.length === 0) throw new Error(`${name}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      });
      const floor = await timed(async () => {
        await runListQuery(floorDb.db, { projectIds: mine, limit: 51, ...f })!.execute();
      });
      // A request's fixed cost (routing, the session check, 50 runs as JSON) is about a millisecond:
      // against a sub-millisecond query the ratio says little, the difference says it.
      const pass = ours <= 25 && (ours / floor <= 3 || ours - floor <= 5);
      lines.push(`  ${name.padEnd(22)} ours ${ours.toFixed(1).padStart(6)} ms, raw SQL ${floor.toFixed(1).padStart(6)} ms, ratio ${(ours / floor).toFixed(2)}, +${(ours - floor).toFixed(1)} ms ${pass ? 'PASS' : 'FAIL'}`);
    }
  } finally {
    await floorDb.close();
    await service.close();
  }
  return lines;
}

export async function benchRunnerRuns(): Promise<string> {
  const dir = tempDir('pier-bench-runs-');
  const lines = [`GET /api/runs?limit=50 at ${RUNS.toLocaleString('en')} runs, median of ${SAMPLES} (target: under 25 ms, within 3x or 5 ms of raw SQL):`];
  const server = await benchPostgres();
  try {
    lines.push('sqlite:', ...(await one(path.join(dir, 'runs.sqlite'), path.join(dir, 'a'))));
    if (server) {
      const pg = await createPostgresDatabase(server.url, 'pier_bench_');
      try {
        lines.push('postgres:', ...(await one(pg.url, path.join(dir, 'b'))));
      } finally {
        await pg.drop();
      }
    } else lines.push('postgres: not available (set BENCH_DATABASE_URL or install postgresql)');
  } finally {
    server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return lines.join('\n');
}
