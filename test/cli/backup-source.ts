import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { type Config, loadConfig } from '../../src/infra/config.js';
import type { Database } from '../../src/infra/database/index.js';
import { localStorage } from '../../src/infra/storage-local.js';
import { openPublishingDatabase, type PublishingDB } from '../../src/publishing/db.js';
import { type RunningDownloads, startDownloads } from '../../src/publishing/downloads/index.js';
import { filesRepository } from '../../src/publishing/files/repository.js';
import { type FilesService, filesService } from '../../src/publishing/files/service.js';
import { createPublishingService, type PublishingService } from '../../src/publishing/service.js';
import { type RunningSftp, startSftp } from '../../src/publishing/sftp/index.js';
import { tempDir } from '../helpers/db.js';
import { run } from '../publishing/sftp/stack.js';
import { type Lease, leaseOf, type ProtocolFixture, protocolFixture } from '../runner/executor-fixtures.js';
import { API_KEY, apiKey, makeZip, multipart, SETUP_TOKEN, startRunner, TestClock, type TestRunner } from '../runner/helpers.js';

export const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** `pier …` as a process of its own, without blocking this process's servers. */
export function pier(env: Record<string, string>, ...args: string[]) {
  return run(process.execPath, ['bin/pier.js', ...args], { env });
}

/** The settings every instance of the test deployments shares (public addresses, keys), beside the data's location. */
export function deploymentEnv(dataDir: string, databaseUrl: string | null, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PIER_DATA_DIR: dataDir,
    PIER_LOG_LEVEL: 'silent',
    PIER_BASE_URL: 'http://pier.test',
    PIER_CRAWL_SETTLE_SECONDS: '0',
    RUNNER_URL: 'http://runner.test',
    RUNNER_SETUP_TOKEN: SETUP_TOKEN,
    API_KEY,
    // Empty means unset: nothing of the environment the tests run in leaks into the deployment.
    PIER_DATABASE_URL: databaseUrl ?? '',
    RUNNER_DATABASE_URL: databaseUrl ?? '',
    PIER_STORAGE_DIR: '',
    RUNNER_STORAGE_DIR: '',
    ...extra,
  };
}

/**
 * A source deployment with real services in this process: the publishing site, SFTP server and
 * download host on free ports, and a runner (through app.inject, as the runner tests do).
 * Both products share one database when it is PostgreSQL (one dump).
 */
export interface Source {
  env: Record<string, string>;
  config: Config;
  dataDir: string;
  webUrl: string;
  web: PublishingService;
  sftp: RunningSftp;
  downloads: RunningDownloads;
  runner: TestRunner;
  rf: ProtocolFixture;
  /** The files service the SFTP server uses (uploads in-process, without an SSH session each). */
  files: FilesService;
  publishingDb: Database<PublishingDB>;
  close(): Promise<void>;
}

export async function startSource(databaseUrl: string | null): Promise<Source> {
  const dataDir = tempDir('pier-backup-src-');
  const dlPort = await freePort();
  const env = deploymentEnv(dataDir, databaseUrl, {
    PIER_DOWNLOAD_PORT: String(dlPort),
    PIER_DOWNLOAD_URL: `http://127.0.0.1:${dlPort}`,
    PIER_SFTP_PORT: '0',
    PIER_HTTP_PORT: '0',
  });
  const config = loadConfig(env);
  const web = await createPublishingService(config, { pageFreshMs: 0 });
  const webUrl = await web.app.listen({ host: '127.0.0.1', port: 0 });
  const sftp = await startSftp(config);
  const downloads = await startDownloads(config);
  const runner = await startRunner({ dataDir, databaseUrl: databaseUrl ?? undefined, env, clock: new TestClock(Date.now()), backgroundLoops: false });
  const rf = await protocolFixture(runner);
  const publishingDb = await openPublishingDatabase(config.publishing.databaseUrl);
  const files = filesService({ storage: localStorage(config.publishing.storageDir), repo: filesRepository(publishingDb.db), limits: config.publishing.limits });
  return {
    env,
    config,
    dataDir,
    webUrl,
    web,
    sftp,
    downloads,
    runner,
    rf,
    files,
    publishingDb,
    async close() {
      await runner.close();
      await sftp.close();
      await downloads.close();
      await web.close();
      await publishingDb.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One upload through the files service (what an SFTP PUT does, commit and record included). */
export async function upload(files: FilesService, productId: string, file: string, data: Buffer): Promise<void> {
  await files.ensureTree(productId);
  const u = await files.beginUpload(productId, file);
  await u.write(data, 0, data.length, 0);
  await u.commit();
}

/** A run an executor holds: its lease, and helpers that write what an executor writes. */
export interface HeldRun {
  id: string;
  lease: Lease;
  log(seq: number, text: string): Promise<void>;
  output(name: string, data: Buffer): Promise<number>;
  complete(status: 'succeeded' | 'failed'): Promise<void>;
}

export async function holdRun(rf: ProtocolFixture, executorId: string, workflowId?: string): Promise<HeldRun> {
  if (workflowId) {
    const res = await rf.inject({ method: 'POST', url: `/api/workflows/${workflowId}/runs`, headers: { authorization: `Bearer ${rf.session}` }, payload: {} });
    assert.equal(res.statusCode, 201, res.body);
  } else {
    await rf.start();
  }
  const c = (await rf.claim(executorId)).claim;
  assert.ok(c, 'the run is claimed');
  const lease = leaseOf(c);
  const id = c.run.id;
  return {
    id,
    lease,
    async log(seq, text) {
      const r = await rf.logs(id, lease, [{ seq, text }]);
      assert.equal(r.statusCode, 200, JSON.stringify(r.body));
    },
    async output(name, data) {
      const m = multipart([
        { name: 'leaseToken', value: lease.leaseToken },
        { name: 'attempt', value: String(lease.attempt) },
        { name: 'sha256', value: sha(data) },
        { name: 'file', file: data, filename: name },
      ]);
      const res = await rf.inject({ method: 'PUT', url: `/api/runs/${id}/outputs/${encodeURIComponent(name)}`, headers: { ...apiKey(API_KEY), ...m.headers }, payload: m.payload });
      return res.statusCode;
    },
    async complete(status) {
      const r = await rf.complete(id, lease, status);
      assert.equal(r.statusCode, 200, JSON.stringify(r.body));
    },
  };
}

/** Uploads a workflow archive (a new workflow, or a new version of `workflowId`); answers the workflow's id. */
export async function uploadWorkflow(rf: ProtocolFixture, content: string, workflowId?: string): Promise<string> {
  const m = multipart([{ name: 'file', file: makeZip('wf/workflow.knime', content), filename: 'Flow.knwf' }]);
  const url = workflowId ? `/api/workflows/${workflowId}/versions` : `/api/projects/${rf.projectId}/workflows`;
  const res = await rf.inject({ method: 'POST', url, headers: { authorization: `Bearer ${rf.session}`, ...m.headers }, payload: m.payload });
  assert.equal(res.statusCode, 201, res.body);
  return workflowId ?? (res.json().id as string);
}

/** Random bytes that start with a readable version line. */
export const versioned = (label: string, size: number) => Buffer.concat([Buffer.from(`${label}\n`), randomBytes(size)]);
