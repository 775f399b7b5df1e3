// Renaming a folder of thousands of files (an SFTP `rename` of a staged label) moves every row in
// batches, letting the event loop serve other sessions between them, and keeps the usage and the
// records equal to the disk. Both databases.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_LIMITS } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { type FilesService, filesService } from '../../../src/publishing/files/service.js';
import { productsRepository } from '../../../src/publishing/products/repository.js';
import { dialects, tempDir } from '../../helpers/db.js';

const FILES = 1_300;
const ID = 'big-rename';

for (const target of dialects()) {
  describe(`renaming a folder of ${FILES} files on ${target.name}`, () => {
    let created: { url: string; drop(): Promise<void> };
    let db: Awaited<ReturnType<typeof openPublishingDatabase>>;
    let root: string;
    let files: FilesService;

    before(async () => {
      created = await target.create();
      db = await openPublishingDatabase(created.url);
      root = tempDir('pier-big-rename-');
      files = filesService({ storage: localStorage(root), repo: filesRepository(db.db), limits: DEFAULT_LIMITS });
      const at = new Date().toISOString();
      await productsRepository(db.db, db.dialect).insert({
        id: ID, name: ID, state: 'hidden', fields: '{}', edit_token_hash: 'h', edit_token_id: 't', sftp_username: ID, sftp_password_hash: 'x', created_at: at, updated_at: at,
      });
      await files.ensureTree(ID);
      await files.makeDir(ID, 'workflows/staged');
      // On disk and recorded, as uploads would leave them.
      const dir = path.join(root, ID, 'workflows', 'staged');
      const rows = Array.from({ length: FILES }, (_, i) => ({ product_id: ID, path: `workflows/staged/f${String(i).padStart(5, '0')}.bin`, size: 10, modified_at: at, uploaded_at: at }));
      for (const r of rows) fs.writeFileSync(path.join(dir, path.basename(r.path)), Buffer.alloc(10));
      for (let i = 0; i < rows.length; i += 400) await db.db.insertInto('product_files').values(rows.slice(i, i + 400)).execute();
    });
    after(async () => {
      await db.close();
      await created.drop();
      fs.rmSync(root, { recursive: true, force: true });
    });

    test('every row moves, the usage stays, and the event loop turns while it moves', async () => {
      const repo = filesRepository(db.db);
      const before = await repo.usage(ID);
      let turns = 0;
      let moving = true;
      const beat = () => {
        if (!moving) return;
        turns++;
        setImmediate(beat);
      };
      setImmediate(beat);
      await files.rename(ID, 'workflows/staged', 'update-site/big');
      moving = false;
      const moved = await repo.listUnder(ID, 'update-site/big/');
      assert.equal(moved.length, FILES);
      assert.equal((await repo.listUnder(ID, 'workflows/')).length, 0);
      assert.deepEqual(await repo.usage(ID), before);
      assert.equal(fs.readdirSync(path.join(root, ID, 'update-site', 'big')).length, FILES);
      // Batches of 500 rows with a turn of the loop between them: at least one turn per batch.
      assert.ok(turns >= Math.floor(FILES / 500), `${turns} turns of the event loop during the move`);
    });
  });
}
