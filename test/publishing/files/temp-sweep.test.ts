import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { localStorage } from '../../../src/infra/storage-local.js';
import { tempDir } from '../../helpers/db.js';

const roots: string[] = [];
after(() => {
  for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
});

function newRoot(): string {
  const r = tempDir('pier-sweep-');
  roots.push(r);
  fs.mkdirSync(path.join(r, 'p/update-site'), { recursive: true });
  return r;
}

function temporaryFiles(root: string): string[] {
  return fs
    .readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((n) => path.basename(n).startsWith('.pier-tmp-'))
    .sort();
}

/** Starts an upload in another process and returns it once the bytes are on disk. */
async function holdUpload(root: string, key: string, bytes: number) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/publishing/files/fixtures/hold-upload.ts', root, key, String(bytes)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (c) => String(c).includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`holder exited with ${code}`)));
  });
  return child;
}

async function kill(child: ReturnType<typeof spawn>): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

test('the temporary file of a killed process is swept at once on the next start; a live process keeps its own', { timeout: 60_000 }, async () => {
  const root = newRoot();
  const killed = await holdUpload(root, 'p/update-site/5.4.zip', 9 * 1024 * 1024);
  const live = await holdUpload(root, 'p/update-site/5.5.zip', 1024);
  try {
    assert.equal(temporaryFiles(root).length, 2);
    await kill(killed);
    // A fresh start (a new process on this machine): its clock says the files are seconds old.
    const restarted = localStorage(root);
    assert.equal(await restarted.sweepTemporary(''), 1);
    const left = temporaryFiles(root);
    assert.equal(left.length, 1, 'only the live upload keeps its temporary file');
    assert.equal(fs.statSync(path.join(root, left[0] as string)).size, 1024);
    await kill(live);
    assert.equal(await restarted.sweepTemporary(''), 1);
    assert.deepEqual(temporaryFiles(root), []);
  } finally {
    killed.kill('SIGKILL');
    live.kill('SIGKILL');
  }
});

test('uploads of this process are kept while open and their files swept once they are gone', async () => {
  const root = newRoot();
  // Given as a relative path, as PIER_STORAGE_DIR may be.
  const storage = localStorage(path.relative(process.cwd(), root));
  const upload = await storage.beginWrite('p/update-site/a.zip');
  await upload.write(Buffer.from('abc'), 0, 3, 0);
  assert.equal(await storage.sweepTemporary(''), 0);
  assert.equal(temporaryFiles(root).length, 1);
  // A temporary file of this process that no open upload owns (its upload's abort failed half-way).
  const [own] = temporaryFiles(root) as [string];
  const orphan = path.join(root, path.dirname(own), `${path.basename(own)}x`);
  fs.copyFileSync(path.join(root, own), orphan);
  assert.equal(await storage.sweepTemporary(''), 1);
  assert.ok(!fs.existsSync(orphan));
  await upload.commit();
  assert.deepEqual(temporaryFiles(root), []);
  assert.equal(fs.readFileSync(path.join(root, 'p/update-site/a.zip'), 'utf8'), 'abc');
});

test('on shared storage another instance keeps its temporary files while its lease runs and loses them after', async () => {
  const root = newRoot();
  let clock = Date.parse('2026-11-23T10:00:00Z');
  const now = () => clock;
  // Another machine: its process cannot be looked up from here, only its lease.
  const other = localStorage(root, { now, instance: { id: 'otherhost0000001', pid: process.pid, host: `${os.hostname()}-elsewhere` }, leaseMs: 10 * 60_000 });
  const here = localStorage(root, { now, leaseMs: 10 * 60_000 });
  const theirs = await other.beginWrite('p/update-site/b.zip');
  await theirs.write(Buffer.from('theirs'), 0, 6, 0);

  clock += 9 * 60_000;
  assert.equal(await here.sweepTemporary(''), 0, 'the lease still runs');
  assert.equal(temporaryFiles(root).length, 1);
  // The other instance renews its lease with its own periodic sweep.
  assert.equal(await other.sweepTemporary(''), 0);
  clock += 9 * 60_000;
  assert.equal(await here.sweepTemporary(''), 0, 'renewed');
  clock += 11 * 60_000;
  assert.equal(await here.sweepTemporary(''), 1, 'expired: the other instance is gone');
  assert.deepEqual(temporaryFiles(root), []);
  await assert.rejects(theirs.commit());
});
