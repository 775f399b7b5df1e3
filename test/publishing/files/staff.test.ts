import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../../src/infra/config.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { filesRepository } from '../../../src/publishing/files/repository.js';
import { filesService } from '../../../src/publishing/files/service.js';
import { hostKeyDir, loadOrCreateHostKeys } from '../../../src/publishing/sftp/host-keys.js';
import { dialects, tempDir } from '../../helpers/db.js';

for (const target of dialects()) {
  describe(`pier staff show / set-limits with uploads on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let env: NodeJS.ProcessEnv;
    const pier = (...args: string[]) => {
      const r = spawnSync(process.execPath, ['bin/pier.js', ...args], { env, encoding: 'utf8' });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };

    before(async () => {
      db = await target.create();
      env = { ...process.env, PIER_DATA_DIR: tempDir(), PIER_DATABASE_URL: db.url, PIER_QUOTA_BYTES: '1G' };
    });
    after(() => db.drop());

    test('show lists labels, file counts, bytes, the last upload, limits and the SFTP host key', async () => {
      assert.equal(pier('staff', 'register', 'up-ext', '--name', 'Up').code, 0);
      const empty = JSON.parse(pier('staff', 'show', 'up-ext', '--json').stdout);
      assert.deepEqual(empty.uploads.labels, []);
      assert.equal(empty.uploads.lastUploadAt, null);

      const config = loadConfig(env);
      const database = await openPublishingDatabase(config.publishing.databaseUrl);
      try {
        const files = filesService({ storage: localStorage(config.publishing.storageDir), repo: filesRepository(database.db), limits: config.publishing.limits });
        await files.ensureTree('up-ext');
        await files.makeDir('up-ext', 'update-site/5.4');
        for (const [p, n] of [['update-site/5.4/content.jar', 100], ['update-site/5.4/artifacts.jar', 50], ['update-site/5.4.zip', 120], ['assets/a.png', 7]] as const) {
          const u = await files.beginUpload('up-ext', p);
          await u.write(Buffer.alloc(n), 0, n, 0);
          await u.commit();
        }
      } finally {
        await database.close();
      }
      const r = pier('staff', 'show', 'up-ext', '--json');
      assert.equal(r.code, 0, r.stderr);
      const shown = JSON.parse(r.stdout);
      assert.equal(shown.uploads.files, 4);
      assert.equal(shown.uploads.bytes, 277);
      assert.ok(shown.uploads.lastUploadAt);
      assert.deepEqual(
        shown.uploads.labels.map((l: Record<string, unknown>) => [l.label, l.files, l.bytes, l.hasArchive, l.archiveBytes]),
        [['5.4', 2, 150, true, 120]],
      );
      assert.deepEqual(shown.uploads.limits, { quotaBytes: 1024 ** 3, quotaFiles: 100_000, maxFileBytes: 2 * 1024 ** 3, quotaFolders: 10_000 });
      // The same fingerprints the SFTP server presents (keys live in the shared storage folder).
      const keys = loadOrCreateHostKeys(hostKeyDir(loadConfig(env).publishing.storageDir));
      assert.deepEqual(shown.sftpHostKeys, keys.map(({ type, fingerprint }) => ({ type, fingerprint })));
      assert.match(shown.sftpHostKeys[0].fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);

      const human = pier('staff', 'show', 'up-ext').stdout;
      assert.match(human, /5\.4\s+2 files/);
      assert.match(human, /SFTP host key: ssh-ed25519 SHA256:/);
    });

    test('set-limits overrides per product, "default" restores; bad values are refused', () => {
      let r = pier('staff', 'set-limits', 'up-ext', '--quota-bytes', '500M', '--quota-files', '10', '--json');
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { quotaBytes: 500 * 1024 ** 2, quotaFiles: 10, maxFileBytes: 2 * 1024 ** 3, quotaFolders: 10_000 });
      r = pier('staff', 'set-limits', 'up-ext', '--quota-files', 'default', '--max-file-size', '64M', '--json');
      assert.deepEqual(JSON.parse(r.stdout), { quotaBytes: 500 * 1024 ** 2, quotaFiles: 100_000, maxFileBytes: 64 * 1024 ** 2, quotaFolders: 10_000 });
      for (const args of [['--quota-bytes', 'lots'], ['--quota-files', '-3'], ['--max-file-size', '0'], []]) {
        r = pier('staff', 'set-limits', 'up-ext', ...args);
        assert.notEqual(r.code, 0, args.join(' '));
        assert.equal(r.stdout, '');
      }
      assert.notEqual(pier('staff', 'set-limits', 'no-such-ext', '--quota-files', '5').code, 0);
    });
  });
}
