/**
 * Label releases at the storage level, attacked as a vendor's SFTP client or a crash would:
 * a released file must not change through the upload folder it was hard-linked from, and a
 * process that dies while building or removing a release copy must not leave its hard links
 * (and so the bytes of replaced files) on disk for good.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import type { Storage } from '../../../src/infra/storage.js';
import { tempDir } from '../../helpers/db.js';

async function put(storage: Storage, key: string, text: string): Promise<void> {
  const w = await storage.beginWrite(key);
  await w.write(Buffer.from(text), 0, Buffer.byteLength(text), 0);
  await w.commit();
}

describe('label releases in local storage', () => {
  const roots: string[] = [];
  const newRoot = () => {
    const r = tempDir('pier-release-storage-');
    roots.push(r);
    return r;
  };
  after(() => {
    for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
  });

  test('times set on an uploaded file (SFTP SETSTAT) leave the released copy of it as it was', async () => {
    const root = newRoot();
    const storage = localStorage(root);
    await storage.makeDir('acme/update-site/5.4/plugins', { recursive: true });
    await put(storage, 'acme/update-site/5.4/plugins/a.jar', 'jar bytes');
    await storage.linkTree('acme/update-site/5.4', 'acme/releases/5.4/1');
    const released = path.join(root, 'acme/releases/5.4/1/plugins/a.jar');
    const before = fs.statSync(released);
    const future = Date.UTC(2100, 0, 1);
    await storage.setTimes('acme/update-site/5.4/plugins/a.jar', future, future);
    const now = fs.statSync(released);
    assert.equal(now.mtimeMs, before.mtimeMs, "the release's mtime (its Last-Modified)");
    assert.equal(now.ino, before.ino);
    const uploaded = await storage.stat('acme/update-site/5.4/plugins/a.jar');
    assert.equal(uploaded?.mtimeMs, future, 'the upload folder has the times asked for');
    assert.equal((await storage.readSmall('acme/update-site/5.4/plugins/a.jar', 100))?.data?.toString(), 'jar bytes');
    assert.deepEqual(fs.readdirSync(path.join(root, 'acme/update-site/5.4/plugins')), ['a.jar'], 'no temporary file left');
    // A file no release shares is changed in place, as before.
    await put(storage, 'acme/update-site/5.4/plugins/b.jar', 'b');
    const ino = fs.statSync(path.join(root, 'acme/update-site/5.4/plugins/b.jar')).ino;
    await storage.setTimes('acme/update-site/5.4/plugins/b.jar', future, future);
    assert.equal(fs.statSync(path.join(root, 'acme/update-site/5.4/plugins/b.jar')).ino, ino);
  });

  test("a release copy or removal left by a process that died is swept; this process's own copy in progress is not", async () => {
    const root = newRoot();
    const storage = localStorage(root);
    await storage.makeDir('acme/update-site/5.4/plugins', { recursive: true });
    // Many folders: the copy awaits each folder's listing, so sweeps interleave with it.
    for (let i = 0; i < 300; i++) {
      await storage.makeDir(`acme/update-site/5.4/plugins/d${i}`);
      await put(storage, `acme/update-site/5.4/plugins/d${i}/p.jar`, `jar ${i}`);
    }
    // What linkTree (building) or removeTree (renamed aside) of a dead instance leaves: a
    // temporary-named folder full of hard links. That instance has no lease.
    const dead = path.join(root, 'acme/releases/5.4/.pier-tmp-0123456789abcdef_0f0f0f0f-0000-4000-8000-000000000000');
    fs.mkdirSync(path.join(dead, 'plugins'), { recursive: true });
    fs.linkSync(path.join(root, 'acme/update-site/5.4/plugins/d0/p.jar'), path.join(dead, 'plugins/p0.jar'));
    // A sweep running while this process builds a copy must not take the copy from under it.
    const copying = storage.linkTree('acme/update-site/5.4', 'acme/releases/5.4/1');
    let done = false;
    void copying.finally(() => {
      done = true;
    });
    const releases = path.join(root, 'acme/releases/5.4');
    const building = () => fs.readdirSync(releases).filter((n) => n.startsWith('.pier-tmp-') && !dead.endsWith(n));
    while (!done && building().length === 0) await new Promise((r) => setImmediate(r));
    assert.equal(building().length, 1, 'the copy is being built');
    let removed = await storage.sweepTemporary('');
    assert.deepEqual(await copying, { files: 300, bytes: [...Array(300).keys()].reduce((n, i) => n + `jar ${i}`.length, 0) });
    removed += await storage.sweepTemporary('');
    assert.equal(fs.existsSync(dead), false, "the dead process's folder is gone");
    assert.equal(removed, 1);
    assert.deepEqual(fs.readdirSync(path.join(root, 'acme/releases/5.4')), ['1']);
    assert.equal(fs.statSync(path.join(root, 'acme/update-site/5.4/plugins/d0/p.jar')).nlink, 2, 'only the release links it now');
  });
});
