import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import type ssh2 from 'ssh2';
import { READDIR_BATCH } from '../../../src/publishing/sftp/session.js';
import { dialects } from '../../helpers/db.js';
import { openSshSftp, ssh2Sftp, startStack } from './stack.js';

const ENTRIES = 60_000;
const HANDLES = 16;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
const heapUsed = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

describe('SFTP listing of a big folder', () => {
  test(`${ENTRIES} entries: OpenSSH lists them all; open folder handles hold one batch each`, { timeout: 300_000 }, async () => {
    const [sqlite] = dialects();
    const db = await sqlite!.create();
    const stack = await startStack(db.url);
    try {
      const creds = (await stack.register('big-ext')).sftp;
      const dir = path.join(stack.storageDir, 'big-ext', 'assets', 'big');
      fs.mkdirSync(dir, { recursive: true });
      const names = Array.from({ length: ENTRIES }, (_, i) => `bundle_${String(i).padStart(5, '0')}.jar`);
      for (const n of names) fs.closeSync(fs.openSync(path.join(dir, n), 'w'));

      const ls = await openSshSftp(stack.sftp.port, creds, ['ls -1 /assets/big']);
      assert.equal(ls.code, 0, ls.stderr);
      const listed = ls.stdout.split('\n').filter((l) => l.startsWith('/assets/big/')).map((l) => l.slice('/assets/big/'.length).trim());
      assert.deepEqual(listed.sort(), names, 'complete, each entry once');

      const { sftp, end } = await ssh2Sftp(stack.sftp.port, creds.username, creds.password);
      try {
        const before = heapUsed();
        const handles: Buffer[] = [];
        for (let i = 0; i < HANDLES; i++) {
          const h = await new Promise<Buffer>((resolve, reject) => sftp.opendir('/assets/big', (e, x) => (e ? reject(e) : resolve(x))));
          const batch = await new Promise<ssh2.FileEntry[]>((resolve, reject) => sftp.readdir(h, (e, l) => (e ? reject(e) : resolve(l))));
          assert.ok(batch.length > 0 && batch.length <= READDIR_BATCH, `one answer holds at most ${READDIR_BATCH} entries (got ${batch.length})`);
          handles.push(h);
        }
        // Each handle read once: the old code had read and stat'ed the whole folder per handle.
        const grown = heapUsed() - before;
        assert.ok(grown < 32 * 1024 * 1024, `${HANDLES} open handles on ${ENTRIES} entries grew the heap by ${grown} bytes`);
        for (const h of handles) await new Promise<void>((resolve, reject) => sftp.close(h, (e) => (e ? reject(e) : resolve())));
      } finally {
        end();
      }
    } finally {
      await stack.close();
      await db.drop();
    }
  });
});
