import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_LIMITS, loadConfig } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { productFilesReader } from '../../../src/publishing/files/reader.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { type FilesService, filesService } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { startSftp } from '../../../src/publishing/sftp/index.js';
import { dialects, tempDir } from '../../helpers/db.js';

type Db = Awaited<ReturnType<typeof openPublishingDatabase>>;

async function addProduct(db: Db, id: string): Promise<void> {
  const at = new Date().toISOString();
  await productsRepository(db.db, db.dialect).insert({
    id,
    name: id,
    state: 'hidden',
    fields: '{}',
    edit_token_hash: `hash-${id}`,
    edit_token_id: 'tok',
    sftp_username: id,
    sftp_password_hash: 'x',
    created_at: at,
    updated_at: at,
  });
}

async function put(files: FilesService, productId: string, p: string, content: string): Promise<void> {
  const upload = await files.beginUpload(productId, p);
  const buf = Buffer.from(content);
  await upload.write(buf, 0, buf.length, 0);
  await upload.commit();
}

/** Every file below the product's folder on disk, temporary files aside, with its size. */
function onDisk(root: string, productId: string): Record<string, number> {
  const out: Record<string, number> = {};
  const dir = path.join(root, productId);
  for (const rel of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const st = fs.statSync(path.join(dir, rel));
    if (st.isFile() && !path.basename(rel).startsWith('.pier-')) out[rel] = st.size;
  }
  return out;
}

async function recorded(db: Db, productId: string): Promise<Record<string, number>> {
  const rows = await db.db.selectFrom('product_files').select(['path', 'size']).where('product_id', '=', productId).execute();
  return Object.fromEntries(rows.map((r) => [r.path, Number(r.size)]).sort());
}

/** A crash after the rename into place and before the database commit, three times over. */
async function crashAfterRenames(files: FilesService, root: string, productId: string): Promise<void> {
  await files.makeDir(productId, 'update-site/5.4');
  await put(files, productId, 'update-site/5.4/content.jar', 'content v1');
  await put(files, productId, 'update-site/5.4/gone.jar', 'gone');
  await put(files, productId, 'assets/logo.svg', '<svg/>');
  const dir = path.join(root, productId);
  // A new file in place, never recorded.
  fs.mkdirSync(path.join(dir, 'update-site/5.4/plugins'));
  fs.writeFileSync(path.join(dir, 'update-site/5.4/plugins/new_1.0.jar'), 'new plug-in');
  // A replacement in place, its record still the previous version's.
  fs.writeFileSync(path.join(dir, 'update-site/5.4/content.jar'), 'content v2, longer');
  // A removal done on disk, its record still there.
  fs.rmSync(path.join(dir, 'update-site/5.4/gone.jar'));
}

for (const target of dialects()) {
  describe(`records and disk agree after a crash on ${target.name}`, () => {
    let created: { url: string; drop(): Promise<void> };
    let db: Db;
    let dataDir: string;
    let root: string;
    let files: FilesService;

    before(async () => {
      created = await target.create();
      db = await openPublishingDatabase(created.url);
      dataDir = tempDir('pier-reconcile-');
      root = path.join(dataDir, 'storage');
      files = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits: DEFAULT_LIMITS });
      for (const id of ['crash-a', 'crash-b', 'crash-c', 'folders']) {
        await addProduct(db, id);
        await files.ensureTree(id);
      }
    });
    after(async () => {
      await db.close();
      await created.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    test('reconcile records what is served, forgets what is gone, and the totals and stamp follow', async () => {
      await crashAfterRenames(files, root, 'crash-a');
      const reader = productFilesReader(filesRepository(db.db));
      const stamp = await reader.changeStamp('crash-a');
      assert.notDeepEqual(await recorded(db, 'crash-a'), onDisk(root, 'crash-a'));

      const result = await files.reconcile('crash-a');
      assert.deepEqual(result, { added: 1, updated: 1, removed: 1, folders: 2 });
      assert.deepEqual(await recorded(db, 'crash-a'), onDisk(root, 'crash-a'));
      const [label] = await reader.listLabels('crash-a');
      assert.equal(label?.files, 2);
      assert.equal(label?.bytes, 'content v2, longer'.length + 'new plug-in'.length);
      const state = await filesRepository(db.db).state('crash-a');
      assert.equal(Number(state?.used_bytes), Object.values(onDisk(root, 'crash-a')).reduce((a, b) => a + b, 0));
      assert.equal(Number(state?.used_files), 3);
      assert.notEqual(await reader.changeStamp('crash-a'), stamp, 'the page cache and the crawler see the change');
      // The crawler's change record of the label moved with it.
      const change = await db.db.selectFrom('label_changes').selectAll().where('product_id', '=', 'crash-a').where('label', '=', '5.4').executeTakeFirst();
      assert.equal(Number(change?.changed_seq), Number(state?.change_seq));

      // Nothing left to do: a second pass changes nothing.
      const settled = await reader.changeStamp('crash-a');
      assert.deepEqual(await files.reconcile('crash-a'), { added: 0, updated: 0, removed: 0, folders: 2 });
      assert.equal(await reader.changeStamp('crash-a'), settled);
    });

    test('a restart reconciles every product', async () => {
      await crashAfterRenames(files, root, 'crash-b');
      const config = loadConfig({
        PIER_DATA_DIR: dataDir,
        PIER_DATABASE_URL: created.url,
        PIER_STORAGE_DIR: root,
        PIER_SFTP_PORT: '0',
        PIER_LOG_LEVEL: 'silent',
      });
      const sftp = await startSftp(config);
      await sftp.close();
      assert.deepEqual(await recorded(db, 'crash-b'), onDisk(root, 'crash-b'));
    });

    test('pier staff rescan reconciles one product and says what it changed', async () => {
      await crashAfterRenames(files, root, 'crash-c');
      const env = { ...process.env, PIER_DATA_DIR: dataDir, PIER_DATABASE_URL: created.url, PIER_STORAGE_DIR: root, PIER_LOG_LEVEL: 'silent' };
      const r = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'rescan', 'crash-c', '--json'], { env, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { productId: 'crash-c', added: 1, updated: 1, removed: 1, folders: 2 });
      assert.deepEqual(await recorded(db, 'crash-c'), onDisk(root, 'crash-c'));
      const human = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'rescan', 'crash-c'], { env, encoding: 'utf8' });
      assert.equal(human.status, 0, human.stderr);
      assert.match(human.stdout, /already matched/);
      const unknown = spawnSync(process.execPath, ['bin/pier.js', 'staff', 'rescan', 'no-such-product'], { env, encoding: 'utf8' });
      assert.notEqual(unknown.status, 0);
    });
  });
}
