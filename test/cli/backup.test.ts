import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Config } from '../../src/infra/config.js';
import { loadConfig } from '../../src/infra/config.js';
import { type Manifest, readManifest } from '../../src/infra/backup/manifest.js';
import { takeBackup } from '../../src/infra/backup/take.js';
import { deploymentPlan } from '../../src/cli/backup-deployment.js';
import { openPublishingDatabase } from '../../src/publishing/db.js';
import type { IssuedCredentials } from '../../src/publishing/products/service.js';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { dialects, tempDir } from '../helpers/db.js';
import { buildSite, exampleSpec, PNG } from '../helpers/p2-fixtures.js';
import { patchProduct } from '../helpers/publishing.js';
import { needsTool } from '../helpers/tools.js';
import { generateSite, openSshSftp } from '../publishing/sftp/stack.js';
import { authorizeClient } from '../runner/oauth-helpers.js';
import { bearer } from '../runner/helpers.js';
import {
  deploymentEnv,
  freePort,
  type HeldRun,
  holdRun,
  pier,
  sha,
  type Source,
  startSource,
  upload,
  uploadWorkflow,
  versioned,
} from './backup-source.js';

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const tools = ['sshpass', 'sftp'].map(needsTool).find((t) => t.skip) ?? { skip: false };
const AREAS = ['update-site', 'assets', 'workflows'];

/** Every regular file below `dir` (relative paths), `.pier-…` names and their contents left out as the storage hides them. */
function filesBelow(dir: string, rel = ''): string[] {
  const abs = path.join(dir, rel);
  if (!fs.existsSync(abs)) return [];
  const out: string[] = [];
  for (const d of fs.readdirSync(abs, { withFileTypes: true })) {
    if (d.name.startsWith('.pier-')) continue;
    const childRel = rel ? `${rel}/${d.name}` : d.name;
    if (d.isDirectory()) out.push(...filesBelow(dir, childRel));
    else out.push(childRel);
  }
  return out.sort();
}

/**
 * Records and files of a deployment agree: every product_files row has its file with that size
 * and every file of a product's areas has its row; every workflow version's archive and every
 * output record's file is there with the recorded sha256, and no other archive or output file is.
 */
async function assertConsistent(config: Config): Promise<void> {
  const p = await openPublishingDatabase(config.publishing.databaseUrl);
  try {
    const rows = await p.db.selectFrom('product_files').select(['product_id', 'path', 'size']).execute();
    const recorded = rows.map((r) => `${r.product_id}/${r.path} ${Number(r.size)}`).sort();
    const products = (await p.db.selectFrom('products').select('id').execute()).map((r) => r.id);
    const stored: string[] = [];
    for (const id of products) {
      for (const area of AREAS) {
        for (const f of filesBelow(config.publishing.storageDir, `${id}/${area}`)) stored.push(`${f} ${fs.statSync(path.join(config.publishing.storageDir, f)).size}`);
      }
    }
    assert.deepEqual(stored.sort(), recorded, 'publishing: every record has its file and every file its record');
    const top = fs.readdirSync(config.publishing.storageDir).filter((n) => !n.startsWith('.pier-'));
    assert.deepEqual(top.filter((n) => !products.includes(n)), [], 'no folder of an unknown product');
  } finally {
    await p.close();
  }
  const r = await openRunnerDatabase(config.runner.databaseUrl);
  try {
    const root = config.runner.storageDir;
    const versions = await r.db.selectFrom('workflow_versions').select(['storage_key', 'sha256']).execute();
    for (const v of versions) {
      const file = path.join(root, 'workflows', v.storage_key);
      assert.ok(fs.existsSync(file), `archive ${v.storage_key} of a recorded version`);
      assert.equal(sha(fs.readFileSync(file)), v.sha256, `sha256 of ${v.storage_key}`);
    }
    assert.deepEqual(filesBelow(path.join(root, 'workflows')), versions.map((v) => v.storage_key).sort(), 'no archive without its version');
    const outputs = await r.db
      .selectFrom('run_outputs')
      .innerJoin('runs', 'runs.id', 'run_outputs.run_id')
      .select(['run_outputs.run_id', 'run_outputs.name', 'run_outputs.sha256', 'run_outputs.size', 'runs.attempt'])
      .execute();
    const expected: string[] = [];
    for (const o of outputs) {
      const rel = `${o.run_id}/${o.attempt}/${o.name}`;
      const file = path.join(root, 'outputs', rel);
      assert.ok(fs.existsSync(file), `output file of record ${rel}`);
      const data = fs.readFileSync(file);
      assert.equal(data.length, Number(o.size), `size of ${rel}`);
      assert.equal(sha(data), o.sha256, `sha256 of ${rel}`);
      expected.push(rel);
    }
    assert.deepEqual(filesBelow(path.join(root, 'outputs')), expected.sort(), 'no output file without its record');
  } finally {
    await r.close();
  }
}

/** `pier serve` on a restored data dir, on free ports; resolves once every part listens. */
async function serve(env: Record<string, string>): Promise<{ web: string; dl: string; runner: string; sftpPort: number; child: ChildProcess; output: () => string }> {
  const [web, dl, sftpPort, runner] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const child = spawn(process.execPath, ['bin/pier.js', 'serve'], {
    env: { ...process.env, ...env, PIER_LOG_LEVEL: 'warn', PIER_HTTP_PORT: String(web), PIER_DOWNLOAD_PORT: String(dl), PIER_SFTP_PORT: String(sftpPort), RUNNER_PORT: String(runner) },
  });
  let out = '';
  child.stdout!.on('data', (c) => (out += c));
  child.stderr!.on('data', (c) => (out += c));
  for (let i = 0; i < 600 && !/Next steps/.test(out) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
  assert.match(out, /Next steps/, `pier serve started on the restored data:\n${out}`);
  return { web: `http://127.0.0.1:${web}`, dl: `http://127.0.0.1:${dl}`, runner: `http://127.0.0.1:${runner}`, sftpPort, child, output: () => out };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** The download host's URL path of a stored file `<product>/<area>/<path>` (downloads/paths.ts). */
function downloadPath(key: string): string {
  const [product, area, ...rest] = key.split('/').map(encodeURIComponent);
  // A kept release of a label: `<product>/releases/<label>/<n>/…` is served at `/<product>/<label>@<n>/…`.
  if (area === 'releases') return `/${product}/${rest[0]}@${rest[1]}/${rest.slice(2).join('/')}`;
  return area === 'update-site' ? `/${product}/${rest.join('/')}` : `/${area}/${product}/${rest.join('/')}`;
}

const text = async (url: string, init?: RequestInit) => {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.text() };
};
const bytes = async (url: string, init?: RequestInit) => {
  const res = await fetch(url, init);
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
};

for (const target of dialects()) {
  describe(`pier backup and restore (${target.name})`, tools, () => {
    const created: { drop(): Promise<void> }[] = [];
    /** Data dirs of restored deployments, removed at the end. */
    const scratch = (prefix: string) => {
      const dir = tempDir(prefix);
      created.push({ drop: async () => fs.rmSync(dir, { recursive: true, force: true }) });
      return dir;
    };
    /** A fresh empty database for a target (PostgreSQL), or null: SQLite files under the data dir. */
    const freshDatabase = async () => {
      if (target.name === 'sqlite') return null;
      const db = await target.create();
      created.push(db);
      return db.url;
    };
    const work = tempDir('pier-backup-work-');
    const backupDir = path.join(work, 'backup');
    let src: Source;
    let creds: Record<string, IssuedCredentials>;
    let executor: string;
    let pat: string;
    let oauthAccess: string;
    let run1: HeldRun;
    let run2: HeldRun;
    let run3: HeldRun;
    /** Everything the loop wrote during the backup: accepted descriptions, and every version of each busy file. */
    const accepted = new Set<string>();
    const versions = new Map<string, Set<string>>();
    const liveOutputs = new Set<string>();

    before(async () => {
      src = await startSource(await freshDatabase());
      creds = {};
      for (const [id, name] of [['live-ext', 'Live Nodes'], ['hidden-ext', 'Hidden Nodes'], ['busy-ext', 'Busy Nodes']] as const) {
        const r = await pier(src.env, 'staff', 'register', id, '--name', name, '--json');
        assert.equal(r.code, 0, r.stderr);
        creds[id] = JSON.parse(r.stdout);
      }
      const patch = async (id: string, body: object) => assert.equal((await patchProduct(src.webUrl, id, creds[id]!.editToken, body)).status, 200);
      await patch('live-ext', { description: 'Nodes that frobnicate widgets', text: '# Overview\n\nNodes that **frobnicate** widgets.\n\n## Usage\n\nDrag them in.' });
      await patch('hidden-ext', { description: 'Not live yet.' });
      await patch('busy-ext', { description: 'Revision 0' });

      // Uploads over SFTP with OpenSSH: a real update site (crawled, live), a bigger generated one, assets, a workflow.
      const site = buildSite(path.join(work, 'site'), exampleSpec());
      fs.writeFileSync(path.join(work, 'logo.png'), PNG);
      const live = await openSshSftp(src.sftp.port, creds['live-ext']!.sftp, [`put -r ${site.dir} /update-site/5.4`, `put ${work}/logo.png /assets/logo.png`]);
      assert.equal(live.code, 0, live.stderr);
      generateSite(path.join(work, 'big'), 200);
      fs.writeFileSync(path.join(work, 'Demo.knwf'), versioned('demo', 70_000));
      const hidden = await openSshSftp(src.sftp.port, creds['hidden-ext']!.sftp, [`put -r ${work}/big /update-site/1.0`, `put ${work}/Demo.knwf /workflows/Demo.knwf`]);
      assert.equal(hidden.code, 0, hidden.stderr);
      const crawl = await pier(src.env, 'staff', 'crawl', 'live-ext', '--json');
      assert.equal(crawl.code, 0, crawl.stdout + crawl.stderr);
      const enable = await pier(src.env, 'staff', 'enable', 'live-ext');
      assert.equal(enable.code, 0, enable.stderr);
      for (let i = 0; i < 4; i++) await upload(src.files, 'busy-ext', `assets/f${i}.bin`, versioned(`initial ${i}`, 2000));

      // The runner: a second user, a personal token, an OAuth grant, runs with logs and outputs.
      const rf = src.rf;
      const alice = await rf.inject({ method: 'POST', url: '/api/users', headers: bearer(rf.session), payload: { email: 'alice@example.com', password: 'alice has a long password' } });
      assert.equal(alice.statusCode, 201, alice.body);
      const token = await rf.inject({ method: 'POST', url: '/api/tokens', headers: bearer(rf.session), payload: { name: 'ci', scope: 'read' } });
      assert.equal(token.statusCode, 201, token.body);
      pat = token.json().token;
      oauthAccess = (await authorizeClient(src.runner, 'root@example.com')).access_token;
      executor = await rf.register({ capacity: 20 });
      run1 = await holdRun(rf, executor);
      for (let seq = 1; seq <= 3; seq++) await run1.log(seq, `run one, line ${seq}`);
      assert.equal(await run1.output('result.csv', Buffer.from('a,b\n1,2\n')), 200);
      await run1.complete('succeeded');
      run2 = await holdRun(rf, executor);
      await run2.log(1, 'run two fails');
      await run2.complete('failed');
      run3 = await holdRun(rf, executor);
      await run3.log(1, 'run three goes on during the backup');
    });

    after(async () => {
      await src?.close();
      for (const db of created) await db.drop();
      fs.rmSync(work, { recursive: true, force: true });
    });

    test('a backup taken while uploads, PATCHes and runs go on restores to a deployment pier serve starts on, with the same pages, downloads, tokens, logins and logs', async () => {
      // Writes keep coming while the backup runs: PATCHes and uploads (and a delete now and then) of
      // one product, outputs and logs of a running run, new versions of a workflow.
      let writing = true;
      const loop = (async () => {
        for (let i = 1; writing; i++) {
          const description = `Revision ${i}`;
          if ((await patchProduct(src.webUrl, 'busy-ext', creds['busy-ext']!.editToken, { description })).status === 200) accepted.add(description);
          const file = `assets/f${i % 4}.bin`;
          const data = versioned(`version ${i}`, 1000 + ((i * 7919) % 60_000));
          versions.set(file, (versions.get(file) ?? new Set()).add(sha(data)));
          await upload(src.files, 'busy-ext', file, data);
          if (i % 5 === 0) await src.files.remove('busy-ext', `assets/f${(i + 2) % 4}.bin`);
          const out = Buffer.from(`live output ${i}\n`);
          liveOutputs.add(sha(out));
          assert.equal(await run3.output('live.txt', out), 200);
          await run3.log(i + 1, `line ${i + 1}`);
          if (i % 3 === 0) await uploadWorkflow(src.rf, `version at ${i}`, src.rf.workflowId);
        }
      })();
      let backup: Awaited<ReturnType<typeof pier>>;
      try {
        backup = await pier(src.env, 'backup', backupDir);
      } finally {
        writing = false;
        await loop;
      }
      assert.equal(backup.code, 0, backup.stderr);
      assert.match(backup.stdout, /Backup written to .*: 1 database|Backup written to .*: 2 databases/);
      assert.match(backup.stderr, /copying stored files: (\d+)\/\1 files/, 'a plain progress line (stderr is not a terminal)');
      assert.doesNotMatch(backup.stderr, /\r/);
      const manifest = readManifest(backupDir);
      assert.equal(fs.statSync(backupDir).mode & 0o777, 0o700, 'the backup holds secrets: its owner only');
      for (const d of manifest.databases) assert.equal(fs.statSync(path.join(backupDir, d.file)).mode & 0o777, 0o600, d.file);
      assert.equal(manifest.databases.length, target.name === 'postgres' ? 1 : 2, 'one dump when both products share a PostgreSQL database');
      assert.ok(manifest.files.some((f) => f.path === '.pier-host-keys/ssh_host_ed25519_key' && f.mode === 0o600), 'host keys, private');
      assert.ok(!manifest.files.some((f) => /\.pier-(tmp|instances)/.test(f.path)), 'no temporary files or leases');

      const verify = await pier(src.env, 'backup', '--verify', backupDir);
      assert.equal(verify.code, 0, verify.stderr);
      assert.match(verify.stdout, /is sound/);

      const dataDir = scratch('pier-restored-');
      const restoredEnv = deploymentEnv(dataDir, await freshDatabase(), { PIER_DOWNLOAD_URL: src.env.PIER_DOWNLOAD_URL!, RUNNER_LEASE_SECONDS: '3600' });
      const restore = await pier(restoredEnv, 'restore', backupDir);
      assert.equal(restore.code, 0, restore.stderr);
      assert.match(restore.stdout, /Restored .*Start it with: pier serve/);
      const restoredConfig = loadConfig(restoredEnv);
      await assertConsistent(restoredConfig);
      // Records of files nobody touched meanwhile are the source's, times included (the restored
      // files keep their modification times, which the records were made from).
      const rowsOf = async (config: Config) => {
        const p = await openPublishingDatabase(config.publishing.databaseUrl);
        try {
          return await p.db.selectFrom('product_files').selectAll().where('product_id', 'in', ['live-ext', 'hidden-ext']).orderBy('product_id').orderBy('path').execute();
        } finally {
          await p.close();
        }
      };
      assert.deepEqual(await rowsOf(restoredConfig), await rowsOf(src.config));
      assert.doesNotMatch(restore.stderr, /live-ext|hidden-ext/, 'nothing of the untouched products was reconciled');

      const served = await serve(restoredEnv);
      try {
        // Pages of the products nobody wrote to meanwhile: byte for byte what the source serves.
        const productHtml = await text(`${src.webUrl}/product/live-ext`);
        const nodeLink = /href="(\/product\/live-ext\/nodes\/[^"]+)"/.exec(productHtml.body)?.[1];
        assert.ok(nodeLink, 'the crawl indexed nodes');
        for (const page of ['/', '/product/live-ext', '/product/hidden-ext', nodeLink, '/nodes?q=widget', '/product/live-ext/badge.svg']) {
          const [a, b] = [await text(`${src.webUrl}${page}`), await text(`${served.web}${page}`)];
          assert.equal(b.status, a.status, page);
          assert.equal(b.body, a.body, `page ${page}`);
        }
        // Every download of those products, byte for byte.
        for (const id of ['live-ext', 'hidden-ext']) {
          const stored = filesBelow(src.config.publishing.storageDir, id);
          assert.ok(stored.length > 3, `${id} has files`);
          for (const rel of stored) {
            const source = path.join(src.config.publishing.storageDir, rel);
            if (fs.lstatSync(source).isSymbolicLink()) {
              // A label's release pointer: the restored deployment serves the same release.
              assert.equal(fs.readlinkSync(path.join(restoredConfig.publishing.storageDir, rel)), fs.readlinkSync(source), rel);
              continue;
            }
            const label = /^[^/]+\/update-site\/([^/]+)\//.exec(rel)?.[1];
            if (label && !fs.existsSync(path.join(restoredConfig.publishing.storageDir, id, 'releases', label, 'current'))) {
              // Never released (hidden-ext's files are no update site): a label serves nothing before its first release.
              assert.equal((await bytes(`${served.dl}${downloadPath(rel)}`)).status, 404, rel);
              continue;
            }
            const got = await bytes(`${served.dl}${downloadPath(rel)}`);
            assert.equal(got.status, 200, rel);
            const generated = /^[^/]+\/update-site\/([^/]+)\/(p2\.index|compositeContent\.xml|compositeArtifacts\.xml)$/.exec(rel);
            if (generated && fs.existsSync(path.join(restoredConfig.publishing.storageDir, rel.split('/')[0]!, 'releases', generated[1]!, 'current'))) {
              // A released label's root sends P2 clients to its current release (downloads/releases.ts).
              if (generated[2] === 'p2.index') assert.match(got.body.toString(), /compositeContent\.xml/, rel);
              continue;
            }
            assert.ok(got.body.equals(fs.readFileSync(path.join(src.config.publishing.storageDir, rel))), `bytes of ${rel}`);
          }
        }
        // The product written during the backup: one of the states it went through.
        const busy = await text(`${served.web}/product/busy-ext`);
        const shown = /Revision \d+/.exec(busy.body)?.[0];
        assert.ok(shown && (shown === 'Revision 0' || accepted.has(shown)), `busy-ext shows an accepted description (${shown})`);
        for (const rel of filesBelow(restoredConfig.publishing.storageDir, 'busy-ext/assets')) {
          const got = await bytes(`${served.dl}${downloadPath(rel)}`);
          assert.equal(got.status, 200, rel);
          const file = rel.slice('busy-ext/'.length);
          const known = versions.get(file) ?? new Set();
          assert.ok(known.has(sha(got.body)) || got.body.toString().startsWith('initial'), `${rel} is one of the versions uploaded`);
        }
        // SFTP: the vendor's password still works, against the same host keys.
        const ls = await openSshSftp(served.sftpPort, creds['live-ext']!.sftp, ['ls /update-site']);
        assert.equal(ls.code, 0, ls.stderr);
        for (const key of ['ssh_host_ed25519_key', 'ssh_host_ecdsa_key']) {
          const keyPath = (c: Config) => path.join(c.publishing.storageDir, '.pier-host-keys', key);
          assert.ok(fs.readFileSync(keyPath(restoredConfig)).equals(fs.readFileSync(keyPath(src.config))), key);
        }

        // The runner: tokens and sessions authenticate, passwords log in, logs and outputs are the same.
        const me = async (authorization: string) => (await fetch(`${served.runner}/api/me`, { headers: { authorization } })).status;
        assert.equal(await me(`ApiKey ${pat}`), 200, 'the personal access token');
        assert.equal(await me(`Bearer ${oauthAccess}`), 200, 'the OAuth access token of the grant');
        assert.equal(await me(`Bearer ${src.rf.session}`), 200, 'a web UI session (the JWT secret is in the database)');
        assert.equal(await me('ApiKey rnr_pat_notatokenatallnotatokenatallnotatokenatall12345'), 401);
        const login = await fetch(`${served.runner}/api/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'alice@example.com', password: 'alice has a long password' }),
        });
        assert.equal(login.status, 200, 'alice logs in');
        const session = { authorization: `Bearer ${src.rf.session}` };
        for (const run of [run1, run2]) {
          const local = await src.rf.inject({ method: 'GET', url: `/api/runs/${run.id}/logs`, headers: session });
          const restored = await text(`${served.runner}/api/runs/${run.id}/logs`, { headers: session });
          assert.equal(restored.status, 200);
          assert.deepEqual(JSON.parse(restored.body), local.json(), `log of ${run.id}`);
          const runLocal = await src.rf.inject({ method: 'GET', url: `/api/runs/${run.id}`, headers: session });
          assert.deepEqual(JSON.parse((await text(`${served.runner}/api/runs/${run.id}`, { headers: session })).body), runLocal.json());
        }
        const result = await bytes(`${served.runner}/api/runs/${run1.id}/outputs/result.csv`, { headers: session });
        assert.equal(result.body.toString(), 'a,b\n1,2\n');
        // The run that went on: its outputs are some version uploaded, matching their records.
        const listed = JSON.parse((await text(`${served.runner}/api/runs/${run3.id}/outputs`, { headers: session })).body).items as { name: string; sha256: string }[];
        for (const o of listed) {
          const got = await bytes(`${served.runner}/api/runs/${run3.id}/outputs/${o.name}`, { headers: session });
          assert.equal(sha(got.body), o.sha256);
          assert.ok(liveOutputs.has(o.sha256), 'an output that was uploaded');
        }
        const wf = JSON.parse((await text(`${served.runner}/api/workflows/${src.rf.workflowId}`, { headers: session })).body);
        for (const v of wf.versions as { version: number; sha256: string }[]) {
          const got = await bytes(`${served.runner}/api/workflows/${src.rf.workflowId}/versions/${v.version}/download`, { headers: session });
          assert.equal(got.status, 200, `version ${v.version}`);
          assert.equal(sha(got.body), v.sha256);
        }
      } finally {
        await stop(served.child);
      }
    });

    test('--verify passes on a good backup and names a damaged or a missing file', async () => {
      const manifest = readManifest(backupDir);
      const victim = manifest.files.find((f) => f.path.startsWith('hidden-ext/update-site/') && f.size > 100)!;
      const file = path.join(backupDir, 'files', victim.storage, victim.path);
      const original = fs.readFileSync(file);
      const damaged = Buffer.from(original);
      damaged[50] = damaged[50]! ^ 0x01;
      fs.writeFileSync(file, damaged);
      const bad = await pier(src.env, 'backup', '--verify', backupDir);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, new RegExp(`files/publishing/${literal(victim.path)}: sha256 differs`));
      fs.rmSync(file);
      const missing = await pier(src.env, 'backup', '--verify', backupDir);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, new RegExp(`files/publishing/${literal(victim.path)}: missing`));
      // A damaged database dump is named too.
      const dump = path.join(backupDir, manifest.databases[0]!.file);
      const dumpBytes = fs.readFileSync(dump);
      fs.writeFileSync(file, original);
      fs.appendFileSync(dump, 'x');
      const badDump = await pier(src.env, 'backup', '--verify', backupDir);
      assert.equal(badDump.code, 2);
      assert.match(badDump.stderr, new RegExp(`${literal(manifest.databases[0]!.file)}: ${dumpBytes.length + 1} bytes`));
      fs.writeFileSync(dump, dumpBytes);
      assert.equal((await pier(src.env, 'backup', '--verify', backupDir)).code, 0);
      // A restore checks too: a damaged backup is refused before anything is written.
      fs.writeFileSync(file, damaged);
      const env = deploymentEnv(scratch('pier-restored-'), await freshDatabase());
      const restore = await pier(env, 'restore', backupDir);
      assert.notEqual(restore.code, 0);
      assert.match(restore.stderr, /does not match the manifest/);
      assert.deepEqual(filesBelow(loadConfig(env).publishing.storageDir), [], 'nothing of the failed restore is kept');
      fs.writeFileSync(file, original);
    });

    test('restore refuses a target whose database has Pier tables or whose storage holds files', async () => {
      const restoredEnv = deploymentEnv(scratch('pier-restored-'), await freshDatabase());
      const first = await pier(restoredEnv, 'restore', backupDir);
      assert.equal(first.code, 0, first.stderr);
      // A password in the URL is never printed (trust authentication ignores it here).
      const withPassword = (url: string) => url.replace(/^postgres:\/\/([^:@/]+)@/, 'postgres://$1:sekrit@');
      // The restored databases, with empty storage folders: the databases alone are reason to refuse.
      const empty = scratch('pier-empty-storage-');
      const again = await pier(
        { ...restoredEnv, PIER_DATABASE_URL: withPassword(restoredEnv.PIER_DATABASE_URL!), PIER_STORAGE_DIR: `${empty}/p`, RUNNER_STORAGE_DIR: `${empty}/r` },
        'restore',
        backupDir,
      );
      assert.equal(again.code, 3, again.stderr);
      assert.match(again.stderr, /the database .* (is not empty \(tables|already has Pier tables)/);
      assert.deepEqual(fs.readdirSync(empty), [], 'a refused restore writes nothing');
      const dataDir = scratch('pier-restored-');
      const env = deploymentEnv(dataDir, await freshDatabase());
      const stray = path.join(loadConfig(env).publishing.storageDir, 'someone', 'file.txt');
      fs.mkdirSync(path.dirname(stray), { recursive: true });
      fs.writeFileSync(stray, 'x');
      const refused = await pier(env, 'restore', backupDir);
      assert.equal(refused.code, 3, refused.stderr);
      assert.match(refused.stderr, new RegExp(`storage folder .* is not empty \\(it holds ${literal(stray)}\\)`));
      assert.doesNotMatch(again.stderr + refused.stderr, /sekrit/);
    });

    test('changes between the snapshot and the file copy: the restored records follow the copied files', async () => {
      const rf = src.rf;
      const session = bearer(rf.session);
      // Before the snapshot: a second workflow with a finished run, runs holding outputs.
      const w2 = await uploadWorkflow(rf, 'second workflow');
      const runW2 = await holdRun(rf, executor, w2);
      assert.equal(await runW2.output('w2.csv', Buffer.from('w2\n')), 200);
      await runW2.complete('succeeded');
      const cancelled = await holdRun(rf, executor);
      assert.equal(await cancelled.output('gone.csv', Buffer.from('gone\n')), 200);
      const replaced = await holdRun(rf, executor);
      assert.equal(await replaced.output('again.csv', Buffer.from('first\n')), 200);
      // Uploads in flight: temporary files that are no stored file.
      const inFlight = [
        path.join(src.config.publishing.storageDir, 'busy-ext', 'assets', '.pier-tmp-0123456789abcdef_x'),
        path.join(src.config.runner.storageDir, 'outputs', '.tmp', `${replaced.id}-inflight`),
        path.join(src.config.runner.storageDir, 'workflows', w2, '.abc.tmp'),
      ];
      for (const f of inFlight) {
        fs.mkdirSync(path.dirname(f), { recursive: true });
        fs.writeFileSync(f, 'partial');
      }
      const newLogo = Buffer.concat([PNG, Buffer.from('a newer logo')]);
      const after = versioned('after', 3000);
      let w3 = '';
      let late: HeldRun | undefined;
      const dir = path.join(work, 'backup-between');
      const manifest: Manifest = await takeBackup(deploymentPlan(src.config), dir, {
        sink: { write: () => true },
        // An update site uploaded to one folder and renamed to its label while the files are
        // copied: found under the new name by the second pass.
        afterWalk: async (pass) => {
          if (pass === 1) await src.files.rename('hidden-ext', 'update-site/1.0', 'update-site/1.1');
        },
        afterSnapshot: async () => {
          await src.files.remove('hidden-ext', 'workflows/Demo.knwf');
          await upload(src.files, 'busy-ext', 'assets/after.bin', after);
          await upload(src.files, 'live-ext', 'assets/logo.png', newLogo);
          await src.web.products.register('late-ext', { name: 'Late' });
          await upload(src.files, 'late-ext', 'assets/late.bin', versioned('late', 10));
          assert.equal((await rf.inject({ method: 'DELETE', url: `/api/workflows/${w2}`, headers: session })).statusCode, 204);
          w3 = await uploadWorkflow(rf, 'third workflow');
          assert.equal((await rf.inject({ method: 'POST', url: `/api/runs/${cancelled.id}/cancel`, headers: session })).statusCode, 200);
          assert.equal((await rf.complete(cancelled.id, cancelled.lease, 'cancelled')).statusCode, 200);
          assert.equal(await replaced.output('again.csv', Buffer.from('second, longer\n')), 200);
          late = await holdRun(rf, executor);
          assert.equal(await late.output('new.csv', Buffer.from('new\n')), 200);
        },
      });
      for (const f of inFlight) fs.rmSync(f, { force: true });
      const listedPaths = manifest.files.map((f) => `${f.storage}/${f.path}`);
      assert.deepEqual(listedPaths.filter((p) => /\.pier-tmp-|\.pier-instances|outputs\/\.tmp|\.abc\.tmp/.test(p)), [], 'uploads in flight are not backed up');

      const env = deploymentEnv(scratch('pier-restored-'), await freshDatabase());
      const restore = await pier(env, 'restore', dir);
      assert.equal(restore.code, 0, restore.stderr);
      const config = loadConfig(env);
      await assertConsistent(config);
      const storage = config.publishing.storageDir;
      const p = await openPublishingDatabase(config.publishing.databaseUrl);
      try {
        const row = (id: string, file: string) => p.db.selectFrom('product_files').selectAll().where('product_id', '=', id).where('path', '=', file).executeTakeFirst();
        // Deleted after the snapshot: neither record nor file.
        assert.equal(await row('hidden-ext', 'workflows/Demo.knwf'), undefined);
        assert.equal(fs.existsSync(path.join(storage, 'hidden-ext/workflows/Demo.knwf')), false);
        // Uploaded after it: the file and a record of it.
        assert.equal(Number((await row('busy-ext', 'assets/after.bin'))?.size), after.length);
        assert.ok(fs.readFileSync(path.join(storage, 'busy-ext/assets/after.bin')).equals(after));
        // Replaced after it: the record describes the file that was copied.
        assert.equal(Number((await row('live-ext', 'assets/logo.png'))?.size), newLogo.length);
        // Moved while the files were copied: under its new name only, with records.
        assert.equal((await p.db.selectFrom('product_files').select('path').where('product_id', '=', 'hidden-ext').where('path', 'like', 'update-site/1.0/%').execute()).length, 0);
        const moved = await p.db.selectFrom('product_files').select('path').where('product_id', '=', 'hidden-ext').where('path', 'like', 'update-site/1.1/%').execute();
        assert.ok(moved.length >= 200, `the renamed update site is in the backup (${moved.length} files)`);
        // A product registered after it: not in the database, so its files are gone too.
        assert.equal(await p.db.selectFrom('products').select('id').where('id', '=', 'late-ext').executeTakeFirst(), undefined);
        assert.equal(fs.existsSync(path.join(storage, 'late-ext')), false);
      } finally {
        await p.close();
      }
      const r = await openRunnerDatabase(config.runner.databaseUrl);
      const runnerRoot = config.runner.storageDir;
      try {
        // A workflow deleted after the snapshot (its archives are gone): deleted with its runs and their outputs.
        assert.equal(await r.db.selectFrom('workflows').select('id').where('id', '=', w2).executeTakeFirst(), undefined);
        assert.equal(await r.db.selectFrom('runs').select('id').where('id', '=', runW2.id).executeTakeFirst(), undefined);
        assert.equal(fs.existsSync(path.join(runnerRoot, 'outputs', runW2.id)), false);
        // A workflow uploaded after it: its archive is not kept.
        assert.equal(fs.existsSync(path.join(runnerRoot, 'workflows', w3)), false);
        // An output removed after it (the run was cancelled): the record is dropped.
        const outputsOf = async (id: string) => r.db.selectFrom('run_outputs').select(['name', 'sha256']).where('run_id', '=', id).execute();
        assert.deepEqual(await outputsOf(cancelled.id), []);
        // An output uploaded again after it: the record describes the copied file.
        assert.deepEqual(await outputsOf(replaced.id), [{ name: 'again.csv', sha256: sha('second, longer\n') }]);
        // Outputs of a run the snapshot does not have: removed.
        assert.equal(fs.existsSync(path.join(runnerRoot, 'outputs', late!.id)), false);
      } finally {
        await r.close();
      }
    });
  });
}

test('without pg_dump, a backup of a PostgreSQL deployment says what to install and writes nothing', async () => {
  const dir = tempDir('pier-nopg-');
  const r = await pier(
    { PATH: path.join(dir, 'empty-bin'), PIER_DATA_DIR: dir, PIER_DATABASE_URL: 'postgres://pier:sekrit@127.0.0.1:1/pier' },
    'backup',
    path.join(dir, 'backup'),
  );
  assert.equal(r.code, 1);
  assert.match(r.stderr, /pg_dump is not installed/);
  assert.match(r.stderr, /apt-get install postgresql-client/);
  assert.match(r.stderr, /pg_basebackup/);
  assert.doesNotMatch(r.stderr, /sekrit/);
  assert.equal(fs.existsSync(path.join(dir, 'backup')), false);
  fs.rmSync(dir, { recursive: true, force: true });
});
