// `pier staff label-notice`: staff set or clear a label's notice for a vendor without
// the edit token, under the same rules as the vendor's PATCH, recorded as "staff" in the history.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../helpers/db.js';
import { type Site, startSite } from '../publishing/web/helpers.js';
import { type Seeder, seeder } from '../publishing/web/page-seed.js';

const ID = 'staff-notices';

for (const target of dialects()) {
  describe(`pier staff label-notice on ${target.name}`, () => {
    let db: { url: string; drop(): Promise<void> };
    let env: NodeJS.ProcessEnv;
    let site: Site;
    let seed: Seeder;
    let token: string;
    const pier = (...args: string[]) => {
      const r = spawnSync(process.execPath, ['bin/pier.js', ...args], { env, encoding: 'utf8' });
      return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const labels = async () =>
      ((await (await fetch(`${site.url}/api/products/${ID}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { fields: { labels?: Record<string, { status: string; replacement?: string; message?: string }> } }).fields
        .labels;

    before(async () => {
      db = await target.create();
      env = { ...process.env, PIER_DATA_DIR: tempDir(), PIER_DATABASE_URL: db.url, PIER_LOG_LEVEL: 'silent' };
      site = await startSite(db.url);
      seed = await seeder(db.url, site.storageDir);
      token = await site.register(ID, { name: 'Staff Notices' });
      await seed.upload(ID, ['update-site/5.3/content.jar', 'update-site/4.7/content.jar']);
    });
    after(async () => {
      await seed.close();
      await site.close();
      await db.drop();
    });

    test('withdraw, then clear: the server sees each change; rules and usage errors are refused', async () => {
      const w = pier('staff', 'label-notice', ID, '4.7', '--withdraw', '--message', 'Broken on Windows.', '--replacement', '5.3', '--json');
      assert.equal(w.code, 0, w.stderr);
      const out = JSON.parse(w.stdout) as { notice: { status: string; replacement: string; since: string } };
      assert.equal(out.notice.status, 'withdrawn');
      assert.equal(out.notice.replacement, '5.3');
      assert.deepEqual(await labels(), { '4.7': { status: 'withdrawn', message: 'Broken on Windows.', replacement: '5.3', since: out.notice.since } });
      const show = pier('staff', 'show', ID, '--json');
      assert.equal(show.code, 0, show.stderr);
      assert.equal((JSON.parse(show.stdout) as { revisions: { tokenId: string; changedFields: string[] }[] }).revisions[0]?.tokenId, 'staff');

      // The same rules as PATCH: an unknown label, a withdrawn replacement.
      const unknown = pier('staff', 'label-notice', ID, '9.9', '--deprecate');
      assert.notEqual(unknown.code, 0);
      assert.match(unknown.stderr, /labels\.9\.9 no label "9\.9" has been uploaded/);
      const toWithdrawn = pier('staff', 'label-notice', ID, '5.3', '--deprecate', '--replacement', '4.7');
      assert.notEqual(toWithdrawn.code, 0);
      assert.match(toWithdrawn.stderr, /labels\.5\.3\.replacement "4\.7" is withdrawn/);
      for (const args of [['--deprecate', '--withdraw'], [], ['--clear', '--message', 'x']]) {
        const r = pier('staff', 'label-notice', ID, '4.7', ...args);
        assert.notEqual(r.code, 0, args.join(' '));
        assert.match(r.stderr, /--deprecate, --withdraw, --clear|--clear takes no/);
      }
      assert.equal((await labels())?.['5.3'], undefined);

      const c = pier('staff', 'label-notice', ID, '4.7', '--clear');
      assert.equal(c.code, 0, c.stderr);
      assert.match(c.stdout, /Label 4\.7 of staff-notices has no notice\./);
      assert.equal(await labels(), undefined);
    });
  });
}
