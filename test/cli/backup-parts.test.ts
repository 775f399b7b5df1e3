import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { describe, test } from 'node:test';
import { databaseIdentity, libpqConnection, maskDatabaseUrl, withoutPassword } from '../../src/infra/backup/database-url.js';
import { BackupDamagedError, RestoreRefusedError } from '../../src/infra/backup/errors.js';
import { copyChecked } from '../../src/infra/backup/file-copy.js';
import { type Manifest, MANIFEST_FILE, manifestProblems, readManifest, safeRelativePath } from '../../src/infra/backup/manifest.js';
import { Progress } from '../../src/infra/backup/progress.js';
import { restoreBackup } from '../../src/infra/backup/restore.js';
import { groupDatabases, takeBackup } from '../../src/infra/backup/take.js';
import { restoreTargets } from '../../src/cli/backup-deployment.js';
import { loadConfig } from '../../src/infra/config.js';
import { localStorage } from '../../src/infra/storage-local.js';
import { isTransientEntry } from '../../src/infra/storage-local-temps.js';
import { labelReleases } from '../../src/publishing/downloads/releases.js';
import { parseDownloadPath } from '../../src/publishing/downloads/paths.js';
import { reconcileRunnerFiles } from '../../src/runner/backup/reconcile.js';
import { openRunnerDatabase } from '../../src/runner/db/index.js';
import { dialects, tempDir } from '../helpers/db.js';
import { protocolFixture } from '../runner/executor-fixtures.js';
import { startRunner } from '../runner/helpers.js';
import { holdRun, sha } from './backup-source.js';

const goodManifest = (): Manifest => ({
  format: 'pier-backup',
  formatVersion: 1,
  pierVersion: '0.1.0',
  snapshotAt: '2026-01-01T00:00:00.000Z',
  finishedAt: '2026-01-01T00:00:01.000Z',
  databases: [],
  storages: [{ name: 'publishing', dir: 'files/publishing' }],
  dirs: [],
  files: [{ storage: 'publishing', path: 'p/assets/a.txt', size: 1, sha256: sha('a'), mtimeMs: 0, mode: 0o644 }],
});

describe('manifest', () => {
  test('paths that could leave the target are refused', () => {
    for (const bad of ['../x', '/etc/passwd', 'a//b', 'a/./b', 'a/../../b', 'a\\b', 'nul\0', '', 7]) assert.equal(safeRelativePath(bad), false, String(bad));
    for (const ok of ['a', 'p/update-site/5.4/plugins/x_1.0.jar', '.pier-host-keys/ssh_host_ed25519_key']) assert.equal(safeRelativePath(ok), true, ok);
  });

  test('a manifest with a path outside its target, an unknown version or bad checksums lists each problem', () => {
    assert.deepEqual(manifestProblems(goodManifest()), []);
    const m = goodManifest();
    m.files.push({ ...m.files[0]!, path: '../../outside' }, { ...m.files[0]!, path: 'p/b', sha256: 'nope' });
    const problems = manifestProblems(m);
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.match(problems[0]!, /bad file entry .*outside/);
    assert.match(problems[1]!, /p\/b: bad size, sha256/);
    assert.match(manifestProblems({ ...goodManifest(), formatVersion: 99 })[0]!, /format version 99 is not supported/);
    assert.match(manifestProblems({ ...goodManifest(), format: 'tarball' })[0]!, /"format"/);
  });

  test('a restore of a crafted manifest writes nothing, inside the target or outside it', async () => {
    const dir = tempDir('pier-crafted-');
    const m = goodManifest();
    m.files = [{ ...m.files[0]!, path: '../../../escaped.txt' }];
    fs.writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify(m));
    const target = tempDir('pier-crafted-target-');
    await assert.rejects(
      restoreBackup(dir, { databases: {}, storages: { publishing: path.join(target, 'storage') }, markers: [] }, { sink: { write: () => true } }),
      (e: unknown) => e instanceof BackupDamagedError && /bad file entry/.test(e.message),
    );
    assert.deepEqual(fs.readdirSync(target), []);
    assert.equal(fs.existsSync(path.join(path.dirname(target), 'escaped.txt')), false);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(target, { recursive: true, force: true });
  });

  test('a target database with tables is refused even when the backup has no dump for it (the restore reconciles every product)', async () => {
    const dir = tempDir('pier-nodump-');
    const m = goodManifest();
    m.files = [];
    fs.writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify(m));
    const target = tempDir('pier-nodump-target-');
    const file = path.join(target, 'runner.sqlite');
    const db = new SQLite(file);
    db.exec('CREATE TABLE runner_migrations (name TEXT)');
    db.close();
    await assert.rejects(
      restoreBackup(dir, { databases: { runner: file }, storages: { publishing: path.join(target, 'storage') }, markers: ['runner_migrations'] }, { sink: { write: () => true } }),
      (e: unknown) => e instanceof RestoreRefusedError && /runner\.sqlite is not empty \(tables runner_migrations\)/.test(e.message),
    );
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(target, { recursive: true, force: true });
  });

  test("label releases survive a backup and restore: each label's pointer is kept, so the current release (not the newest, not the upload folder) is served", async () => {
    const root = tempDir('pier-links-src-');
    const storage = localStorage(root);
    const put = async (key: string, text: string) => {
      const w = await storage.beginWrite(key);
      await w.write(Buffer.from(text), 0, text.length, 0);
      await w.commit();
    };
    await storage.makeDir('acme-nodes/update-site/5.4', { recursive: true });
    await put('acme-nodes/update-site/5.4/content.xml', 'one');
    await storage.makeDir('acme-nodes/update-site/5.4/plugins');
    await put('acme-nodes/update-site/5.4/plugins/a.jar', 'unchanged in every release');
    await storage.linkTree('acme-nodes/update-site/5.4', 'acme-nodes/releases/5.4/1');
    await put('acme-nodes/update-site/5.4/content.xml', 'two');
    await storage.linkTree('acme-nodes/update-site/5.4', 'acme-nodes/releases/5.4/2');
    await put('acme-nodes/update-site/5.4/content.xml', 'three, being uploaded');
    await storage.setPointer('acme-nodes/releases/5.4/current', '2');
    await storage.setPointer('acme-nodes/releases/5.4/current', '1'); // rolled back
    // A link no storage call makes (put there by hand) is not a pointer: not backed up.
    fs.symlinkSync('/etc/passwd', path.join(root, 'acme-nodes/releases/5.4/stray'));
    const dir = path.join(tempDir('pier-links-backup-'), 'b');
    const source = { name: 'publishing', root, include: [''], transient: (rel: string) => isTransientEntry(rel) };
    const manifest = await takeBackup({ databases: [], storages: [source] }, dir, { sink: { write: () => true } });
    assert.deepEqual(manifest.links, [{ storage: 'publishing', path: 'acme-nodes/releases/5.4/current', target: '1' }]);
    const restored = path.join(tempDir('pier-links-target-'), 'storage');
    const { shareable } = restoreTargets(loadConfig({ PIER_DATA_DIR: tempDir('pier-links-config-') }));
    await restoreBackup(dir, { databases: {}, storages: { publishing: restored }, markers: [], shareable }, { sink: { write: () => true } });
    // The jar the upload folder and both releases share is one file again, not three copies.
    assert.equal(fs.statSync(path.join(restored, 'acme-nodes/releases/5.4/1/plugins/a.jar')).nlink, 3);
    assert.equal(fs.statSync(path.join(restored, 'acme-nodes/update-site/5.4/content.xml')).nlink, 1);
    const after = localStorage(restored);
    assert.equal(after.pointer('acme-nodes/releases/5.4/current'), '1');
    assert.equal(fs.existsSync(path.join(restored, 'acme-nodes/releases/5.4/stray')), false);
    const parsed = parseDownloadPath('/acme-nodes/5.4/content.xml');
    assert.ok(parsed.ok);
    const answer = await labelReleases(after).resolve(parsed.target);
    assert.ok('key' in answer);
    assert.equal((await after.readSmall(answer.key, 1024))?.data?.toString(), 'one');
  });

  test('a manifest link that could point outside its folder is refused', () => {
    for (const target of ['../1', '/etc', 'a/b', '..', '', 'x\0']) {
      const m = { ...goodManifest(), links: [{ storage: 'publishing', path: 'acme-nodes/releases/5.4/current', target }] };
      assert.match(manifestProblems(m).join('\n'), /bad link entry/, target);
    }
    assert.deepEqual(manifestProblems({ ...goodManifest(), links: [{ storage: 'publishing', path: 'acme-nodes/releases/5.4/current', target: '7' }] }), []);
  });

  test('a folder without manifest is not a backup (or one that did not finish)', () => {
    const dir = tempDir('pier-none-');
    assert.throws(() => readManifest(dir), (e: unknown) => e instanceof BackupDamagedError && /manifest\.json is missing/.test(e.message));
    fs.rmSync(dir, { recursive: true });
  });
});

describe('database URLs', () => {
  test('passwords are masked wherever a URL is shown, and travel to pg tools in the environment only', () => {
    const url = 'postgres://pier:s%3Acret@db.example:5433/pier?sslmode=require';
    assert.equal(maskDatabaseUrl(url), 'postgres://pier:***@db.example:5433/pier?sslmode=require');
    assert.equal(maskDatabaseUrl('/var/lib/pier/pier.sqlite'), '/var/lib/pier/pier.sqlite');
    assert.equal(withoutPassword('FATAL: password "s:cret" refused', url), 'FATAL: password "***" refused');
    const { dbname, env } = libpqConnection(url);
    assert.doesNotMatch(dbname, /cret/);
    assert.deepEqual(env, { PGPASSWORD: 's:cret' });
    // node-pg also takes the password as a query parameter: masked and moved the same way.
    const query = 'postgres://pier@db.example/pier?password=S3cretQ&sslmode=require';
    assert.doesNotMatch(maskDatabaseUrl(query), /S3cretQ/);
    assert.doesNotMatch(libpqConnection(query).dbname, /S3cretQ/);
    assert.deepEqual(libpqConnection(query).env, { PGPASSWORD: 'S3cretQ' });
    assert.equal(withoutPassword('password "S3cretQ" refused', query), 'password "***" refused');
  });

  test('restoring a file reads a regular file only, and no more than the manifest says', async () => {
    const dir = tempDir('pier-copy-checked-');
    try {
      const sha0 = sha(Buffer.alloc(0));
      await assert.rejects(copyChecked('/dev/zero', path.join(dir, 'a'), { size: 10, sha256: sha0 }, { mode: 0o644 }), /not a regular file/);
      fs.writeFileSync(path.join(dir, 'big'), Buffer.alloc(4096));
      await assert.rejects(copyChecked(path.join(dir, 'big'), path.join(dir, 'b'), { size: 10, sha256: sha0 }, { mode: 0o644 }), /larger than the manifest/);
      assert.ok(!fs.existsSync(path.join(dir, 'b')), 'nothing is left of a refused copy');
      const bytes = Buffer.from('content');
      fs.writeFileSync(path.join(dir, 'ok'), bytes);
      await copyChecked(path.join(dir, 'ok'), path.join(dir, 'c'), { size: bytes.length, sha256: sha(bytes) }, { mode: 0o6777 });
      assert.equal(fs.statSync(path.join(dir, 'c')).mode & 0o7777, 0o777, 'permission bits only, no set-id or sticky bits');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('products on one database share one dump, whoever connects', () => {
    assert.equal(databaseIdentity('postgres://a:x@Host:5432/pier'), databaseIdentity('postgres://b@host/pier'));
    assert.notEqual(databaseIdentity('postgres://a@host/pier'), databaseIdentity('postgres://a@host/other'));
    const groups = groupDatabases([
      { product: 'publishing', url: 'postgres://a@h/pier' },
      { product: 'runner', url: 'postgres://b:pw@h:5432/pier' },
    ]);
    assert.deepEqual(groups.map((g) => g.products), [['publishing', 'runner']]);
    assert.equal(groupDatabases([{ product: 'publishing', url: '/d/pier.sqlite' }, { product: 'runner', url: '/d/runner.sqlite' }]).length, 2);
  });
});

describe('progress lines', () => {
  test('plain lines when stderr is not a terminal, one rewritten line when it is', () => {
    let t = 0;
    const plain: string[] = [];
    const p = new Progress('copying stored files', 3, 3000, { write: (s: string) => plain.push(s) }, () => t);
    p.advance(1000);
    t += 2500;
    p.advance(1000);
    p.advance(1000);
    p.done();
    assert.deepEqual(plain, ['pier: copying stored files: 2/3 files, 2.0 KiB/2.9 KiB\n', 'pier: copying stored files: 3/3 files, 2.9 KiB/2.9 KiB\n']);
    const tty: string[] = [];
    const q = new Progress('restoring stored files', 1, 10, { write: (s: string) => tty.push(s), isTTY: true }, () => 0);
    q.advance(10);
    q.done();
    assert.deepEqual(tty, ['\r\x1b[2Kpier: restoring stored files: 1/1 files, 10 B/10 B\n']);
  });
});

for (const target of dialects()) {
  test(`runner outputs on a restore (${target.name}): only the files of each run's current attempt stay, legacy files included`, async () => {
    const db = await target.create();
    const r = await startRunner({ databaseUrl: db.url, backgroundLoops: false });
    const handle = await openRunnerDatabase(r.config.runner.databaseUrl);
    try {
      const rf = await protocolFixture(r);
      const executor = await rf.register({ capacity: 4 });
      const lost = await holdRun(rf, executor);
      assert.equal(await lost.output('first.csv', Buffer.from('attempt one\n')), 200);
      const legacy = await holdRun(rf, executor);
      const root = r.config.runner.storageDir;
      // The run is at its second attempt in the (restored) database; the file is the first attempt's.
      await handle.db.updateTable('runs').set({ attempt: 2 }).where('id', '=', lost.id).execute();
      // An output stored before outputs were kept per attempt: in the run's own folder.
      fs.mkdirSync(path.join(root, 'outputs', legacy.id), { recursive: true });
      fs.writeFileSync(path.join(root, 'outputs', legacy.id, 'old.csv'), 'legacy bytes\n');
      await handle.db
        .insertInto('run_outputs')
        .values({ run_id: legacy.id, name: 'old.csv', size: 1, sha256: sha('something else'), content_type: null, created_at: new Date().toISOString() })
        .execute();
      fs.writeFileSync(path.join(root, 'outputs', 'stray-file'), 'x');
      const result = await reconcileRunnerFiles(handle.db, root, () => undefined);
      assert.equal(result.outputRecordsDropped, 1);
      assert.equal(result.outputRecordsCorrected, 1);
      assert.equal(result.outputFilesRemoved, 2);
      assert.equal(fs.existsSync(path.join(root, 'outputs', lost.id)), false, 'the lost attempt\'s folder is gone');
      assert.equal(fs.readFileSync(path.join(root, 'outputs', legacy.id, 'old.csv'), 'utf8'), 'legacy bytes\n');
      const rows = await handle.db.selectFrom('run_outputs').select(['run_id', 'name', 'size', 'sha256']).execute();
      assert.deepEqual(rows.map((x) => ({ ...x, size: Number(x.size) })), [{ run_id: legacy.id, name: 'old.csv', size: 13, sha256: sha('legacy bytes\n') }]);
    } finally {
      await handle.close();
      await r.close();
      await db.drop();
    }
  });
}
