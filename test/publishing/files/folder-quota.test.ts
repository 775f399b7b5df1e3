import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_LIMITS } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { type FilesService, filesService, QuotaExceededError } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';
import { needsTool } from '../../helpers/tools.js';
import { openSshSftp, type Stack, ssh2Sftp, startStack } from '../sftp/stack.js';

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

function foldersOnDisk(root: string, productId: string): number {
  const dir = path.join(root, productId);
  return fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((n) => fs.statSync(path.join(dir, n)).isDirectory()).length - 3;
}

for (const target of dialects()) {
  describe(`folder quota on ${target.name}`, () => {
    let created: { url: string; drop(): Promise<void> };
    let db: Db;
    let other: Db;
    let root: string;
    let files: FilesService;
    let otherInstance: FilesService;

    before(async () => {
      created = await target.create();
      db = await openPublishingDatabase(created.url);
      other = await openPublishingDatabase(created.url);
      root = tempDir('pier-folders-');
      const limits = { ...DEFAULT_LIMITS, quotaFolders: 5 };
      files = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits });
      otherInstance = filesService({ storage: localStorage(root), repo: filesRepository(other.db), limits });
      await addProduct(db, 'dirs');
      await files.ensureTree('dirs');
    });
    after(async () => {
      await other.close();
      await db.close();
      await created.drop();
      fs.rmSync(root, { recursive: true, force: true });
    });

    test('folders past the quota are refused, also when two instances create them at once; removing one frees its place', async () => {
      await files.makeDir('dirs', 'assets/a');
      await files.makeDir('dirs', 'update-site/5.4');
      const made = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? files : otherInstance).makeDir('dirs', `workflows/w${i}`)),
      );
      const refused = made.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason);
      assert.equal(made.length - refused.length, 3);
      for (const e of refused) {
        assert.ok(e instanceof QuotaExceededError, String(e));
        assert.equal(e.message, 'folder quota exceeded: this product may have 5 folders');
      }
      assert.equal(foldersOnDisk(root, 'dirs'), 5);
      // A refused or failed creation counts nothing.
      await assert.rejects(files.makeDir('dirs', 'assets/a'), QuotaExceededError);
      await files.removeDir('dirs', 'assets/a');
      await assert.rejects(files.makeDir('dirs', 'assets/missing/parent'), { code: 'ENOENT' });
      await assert.rejects(files.makeDir('dirs', 'update-site/5.4'), { code: 'EEXIST' });
      await files.makeDir('dirs', 'assets/b');
      // A rename moves a folder without counting it twice.
      await files.rename('dirs', 'assets/b', 'assets/c');
      await assert.rejects(files.makeDir('dirs', 'assets/d'), /folder quota exceeded/);
      assert.equal(foldersOnDisk(root, 'dirs'), 5);
      assert.equal(Number((await filesRepository(db.db).state('dirs'))?.used_folders), 5);
    });
  });

  describe(`folder quota over SFTP on ${target.name}`, { ...needsTool('sshpass') }, () => {
    let created: { url: string; drop(): Promise<void> };
    let stack: Stack;
    before(async () => {
      created = await target.create();
      stack = await startStack(created.url, { env: { PIER_QUOTA_FOLDERS: '2' } });
    });
    after(async () => {
      await stack.close();
      await created.drop();
    });

    test('MKDIR past the folder quota gets a failure status that names the limit', async () => {
      const creds = (await stack.register('sftp-dirs')).sftp;
      const r = await openSshSftp(stack.sftp.port, creds, ['mkdir /assets/one', 'mkdir /assets/two', 'mkdir /assets/three']);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /three/);
      const client = await ssh2Sftp(stack.sftp.port, creds.username, creds.password);
      try {
        const err = await new Promise<Error | undefined>((resolve) => client.sftp.mkdir('/assets/four', (e) => resolve(e ?? undefined)));
        assert.match(String(err?.message), /folder quota exceeded: this product may have 2 folders/);
        await new Promise<void>((resolve, reject) => client.sftp.rmdir('/assets/one', (e) => (e ? reject(e) : resolve())));
        await new Promise<void>((resolve, reject) => client.sftp.mkdir('/assets/four', (e) => (e ? reject(e) : resolve())));
      } finally {
        client.end();
      }
      assert.deepEqual(fs.readdirSync(path.join(stack.storageDir, 'sftp-dirs/assets')).sort(), ['four', 'two']);
    });
  });
}
