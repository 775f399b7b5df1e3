/**
 * A label of 20,000 files (the default file quota allows 100,000) released with one file changed:
 * the copy, the removal of a kept release and the count of what releases hold run while the
 * event loop keeps serving. Proved structurally, without timings: a 1 ms heartbeat timer looks
 * at the link counts of a sample of the label's files, and must find the work half done (some
 * sampled files linked, or unlinked, and others not yet) at some of its ticks. With one
 * synchronous call per file, a whole folder is done between two ticks and no tick sees it half done.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import { openPublishingDatabase } from '../../../src/publishing/db.js';
import { releasesRepository } from '../../../src/publishing/releases/repository.js';
import { releasesService } from '../../../src/publishing/releases/service.js';
import { dialects, tempDir } from '../../helpers/db.js';

const FILES = 20_000;

/**
 * A 1 ms heartbeat until stopped: counts its ticks, and the ticks at which `progress` (the share
 * of some work done, 0 to 1) was strictly between none and all.
 */
export function heartbeat(progress: () => number = () => 0) {
  let ticks = 0;
  let midway = 0;
  const timer = setInterval(() => {
    ticks++;
    const p = progress();
    if (p > 0 && p < 1) midway++;
  }, 1);
  return {
    stop() {
      clearInterval(timer);
      return { ticks, midway };
    },
  };
}

/** The share of `files` whose link count is `links` now. */
const linkedShare = (files: string[], links: number) => () => files.filter((f) => fs.statSync(f).nlink === links).length / files.length;

/** `<root>/<key>` with FILES small files: most in one flat folder (as `plugins/` is), a few nested. */
export function bigLabel(root: string, key: string, files = FILES): void {
  const dir = path.join(root, key);
  fs.mkdirSync(path.join(dir, 'plugins'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'features/nested'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'content.xml'), 'content v1');
  for (let i = 0; i < files - 2; i++) fs.writeFileSync(path.join(dir, 'plugins', `p${i}.jar`), `jar ${i}`);
  fs.writeFileSync(path.join(dir, 'features/nested/f.jar'), 'feature');
}

describe('a release copy of a 20,000-file label', () => {
  const roots: string[] = [];
  after(() => {
    for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
  });

  test('copy, count and removal leave the event loop turning, and copy exactly the folder', { timeout: 120_000 }, async () => {
    const root = tempDir('pier-big-label-');
    roots.push(root);
    const storage = localStorage(root);
    bigLabel(root, 'acme/update-site/5.4');
    // Every thousandth file of the flat folder (listed in no particular order).
    const sample = Array.from({ length: 18 }, (_, i) => path.join(root, 'acme/update-site/5.4/plugins', `p${i * 1000 + 7}.jar`));

    let beat = heartbeat(linkedShare(sample, 2));
    const counts = await storage.linkTree('acme/update-site/5.4', 'acme/releases/5.4/1');
    const copying = beat.stop();
    assert.deepEqual(counts, { files: FILES, bytes: fs.readdirSync(path.join(root, 'acme/update-site/5.4/plugins')).reduce((n, f) => n + fs.statSync(path.join(root, 'acme/update-site/5.4/plugins', f)).size, 0) + 'content v1'.length + 'feature'.length });
    // Every file is a second name of the uploaded one.
    assert.equal(fs.statSync(path.join(root, 'acme/releases/5.4/1/plugins/p7.jar')).ino, fs.statSync(path.join(root, 'acme/update-site/5.4/plugins/p7.jar')).ino);
    assert.equal(fs.readFileSync(path.join(root, 'acme/releases/5.4/1/features/nested/f.jar'), 'utf8'), 'feature');

    // One file changed, released again.
    fs.writeFileSync(path.join(root, 'acme/update-site/5.4/.tmp'), 'content v2');
    fs.renameSync(path.join(root, 'acme/update-site/5.4/.tmp'), path.join(root, 'acme/update-site/5.4/content.xml'));
    await storage.linkTree('acme/update-site/5.4', 'acme/releases/5.4/2');
    assert.equal(fs.readFileSync(path.join(root, 'acme/releases/5.4/1/content.xml'), 'utf8'), 'content v1', 'release 1 keeps what it had');
    assert.equal(fs.readFileSync(path.join(root, 'acme/releases/5.4/2/content.xml'), 'utf8'), 'content v2');

    beat = heartbeat();
    const links = await storage.fileLinks(['acme/releases/5.4/1', 'acme/releases/5.4/2', 'acme/releases/5.4/none']);
    const counting = beat.stop();
    assert.deepEqual(links.files.map((f) => f?.length ?? null), [FILES, FILES, null]);
    assert.equal(links.size.length, FILES + 1, 'each stored file once: the shared ones and both content.xml');
    assert.equal(links.links.filter((n) => n === 3).length, FILES - 1, 'unchanged files: upload + two releases');

    beat = heartbeat(linkedShare(sample, 2));
    await storage.removeTree('acme/releases/5.4/1');
    const removing = beat.stop();
    assert.equal(fs.existsSync(path.join(root, 'acme/releases/5.4/1')), false);
    assert.deepEqual(fs.readdirSync(path.join(root, 'acme/releases/5.4')), ['2'], 'nothing left aside');
    assert.equal(fs.statSync(path.join(root, 'acme/update-site/5.4/plugins/p7.jar')).nlink, 2);

    for (const [what, beats] of Object.entries({ copying, removing })) {
      assert.ok(beats.midway >= 3, `${what}: the heartbeat saw the work half done at ${beats.midway} of its ${beats.ticks} ticks`);
    }
    assert.ok(counting.ticks >= 3, `counting: the heartbeat fired ${counting.ticks} times`);
  });

  for (const dialect of dialects()) {
    test(`a release of the label with one file changed: copy and pruning leave the loop and the database to other requests (${dialect.name})`, { timeout: 240_000 }, async () => {
      const root = tempDir('pier-big-release-');
      roots.push(root);
      const target = await dialect.create();
      const database = await openPublishingDatabase(target.url);
      try {
        const now = new Date().toISOString();
        await database.db
          .insertInto('products')
          .values({ id: 'acme', name: 'Acme', state: 'hidden', fields: '{}', edit_token_hash: 'x', edit_token_id: 'x', sftp_username: 'acme', sftp_password_hash: 'x', created_at: now, updated_at: now })
          .execute();
        bigLabel(root, 'acme/update-site/5.4');
        const repo = releasesRepository(database.db);
        const releases = releasesService({ storage: localStorage(root), repo, keep: 3 });
        const change = (n: number) => {
          fs.writeFileSync(path.join(root, 'acme/update-site/5.4/.next'), `content v${n}`);
          fs.renameSync(path.join(root, 'acme/update-site/5.4/.next'), path.join(root, 'acme/update-site/5.4/content.xml'));
        };
        for (let n = 1; n <= 3; n++) {
          change(n);
          await releases.release(await releases.candidate('acme', '5.4', n), { kind: 'vendor' });
        }
        // Unchanged files have 4 names now (upload, releases 1-3): 5 while release 4 is copied,
        // 4 again once release 1 (past the 3 kept) is removed.
        const sample = Array.from({ length: 18 }, (_, i) => path.join(root, 'acme/update-site/5.4/plugins', `p${i * 1000 + 7}.jar`));
        const share = linkedShare(sample, 5);
        change(4);
        // Another request's query, sent at every tick: it must be answered while the work is
        // half done (with the removal inside the product's transaction, SQLite's one connection
        // answered nothing else until every file was unlinked).
        const answered = { copying: 0, pruning: 0 };
        const watch = (phase: keyof typeof answered, progress: () => number) =>
          heartbeat(() => {
            const p = progress();
            void repo.room('acme').then(() => {
              const q = progress();
              if (p > 0 && p < 1 && q > 0 && q < 1) answered[phase]++;
            });
            return p;
          });
        let beat = watch('copying', share);
        const c = await releases.candidate('acme', '5.4', 4);
        const copied = beat.stop();
        beat = watch('pruning', () => 1 - share());
        assert.equal(await releases.release(c, { kind: 'vendor' }), true);
        const pruned = beat.stop();
        assert.deepEqual(fs.readdirSync(path.join(root, 'acme/releases/5.4')).sort(), ['2', '3', '4', 'current']);
        assert.equal(fs.readFileSync(path.join(root, 'acme/releases/5.4/4/content.xml'), 'utf8'), 'content v4');
        assert.deepEqual((await releases.list('acme'))[0]?.releases.map((r) => [r.number, r.files]), [[4, FILES], [3, FILES], [2, FILES]]);
        for (const [what, beats] of Object.entries({ copied, pruned })) {
          assert.ok(beats.midway >= 3, `${what}: the heartbeat saw the work half done at ${beats.midway} of its ${beats.ticks} ticks`);
        }
        for (const [what, n] of Object.entries(answered)) assert.ok(n >= 3, `${what}: ${n} queries of other requests were answered while the work was half done`);
      } finally {
        await database.close();
        await target.drop();
      }
    });
  }
});
