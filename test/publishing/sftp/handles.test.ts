import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import ssh2 from 'ssh2';
import { MAX_HANDLES } from '../../../src/publishing/sftp/session.js';
import { dialects } from '../../helpers/db.js';
import { ssh2Sftp, type Stack, startStack } from './stack.js';

const { FAILURE } = ssh2.utils.sftp.STATUS_CODE;
type Sftp = ssh2.SFTPWrapper;

const openFds = () => fs.readdirSync('/proc/self/fd').length;

/** Temporary upload files anywhere in the storage folder. */
function temporaryFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((rel) => path.basename(rel).startsWith('.pier-tmp-'));
}

function open(sftp: Sftp, p: string, flags: ssh2.OpenMode): Promise<{ handle: Buffer | null; code: number; message: string }> {
  return new Promise((resolve) =>
    sftp.open(p, flags, (err, handle) =>
      resolve(err ? { handle: null, code: Number((err as { code?: number }).code ?? -1), message: err.message } : { handle, code: 0, message: '' }),
    ),
  );
}

const write = (sftp: Sftp, h: Buffer, text: string) =>
  new Promise<void>((resolve, reject) => sftp.write(h, Buffer.from(text), 0, text.length, 0, (e) => (e ? reject(e) : resolve())));
const close = (sftp: Sftp, h: Buffer) => new Promise<void>((resolve, reject) => sftp.close(h, (e) => (e ? reject(e) : resolve())));

describe('SFTP handles over the cap', () => {
  const [sqlite] = dialects();
  let stack: Stack;
  let drop: () => Promise<void>;
  let session: { sftp: Sftp; end(): void };

  before(async () => {
    const db = await sqlite!.create();
    drop = db.drop;
    stack = await startStack(db.url);
    const creds = (await stack.register('handles-ext')).sftp;
    session = await ssh2Sftp(stack.sftp.port, creds.username, creds.password);
    await new Promise<void>((resolve, reject) => session.sftp.writeFile('/assets/kept.txt', 'kept', (e) => (e ? reject(e) : resolve())));
  });
  after(async () => {
    session.end();
    await stack.close();
    await drop();
  });

  test('thousands of refused OPENs (read and write) acquire nothing: no descriptor, no temporary file', async () => {
    const s = session.sftp;
    const held: Buffer[] = [];
    for (let i = 0; i < MAX_HANDLES; i++) {
      const r = i % 2 === 0 ? await open(s, '/assets/kept.txt', 'r') : await open(s, `/assets/held-${i}.bin`, 'w');
      assert.equal(r.code, 0, r.message);
      held.push(r.handle as Buffer);
      // An upload's file is created while its first bytes come (OPEN answers first): a write
      // waits for it, so every held handle has its descriptor before they are counted.
      if (i % 2 === 1) await write(s, r.handle as Buffer, 'x');
    }
    const fdsBefore = openFds();
    const tempsBefore = temporaryFiles(stack.storageDir).length;
    assert.equal(tempsBefore, MAX_HANDLES / 2, 'one temporary file per held write handle');

    for (let round = 0; round < 10; round++) {
      const refused = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          i % 2 === 0 ? open(s, '/assets/kept.txt', 'r') : open(s, `/assets/refused-${round}-${i}.bin`, i % 4 === 1 ? 'w' : 'a'),
        ),
      );
      for (const r of refused) {
        assert.equal(r.code, FAILURE);
        assert.match(r.message, /Too many open handles/);
      }
    }
    assert.equal(openFds(), fdsBefore, 'no descriptor left behind by 2,000 refused OPENs');
    assert.equal(temporaryFiles(stack.storageDir).length, tempsBefore, 'no temporary file left behind');

    for (const h of held) await close(s, h);
    // The handles are usable again once some are closed.
    const again = await open(s, '/assets/kept.txt', 'r');
    assert.equal(again.code, 0, again.message);
    await close(s, again.handle as Buffer);
  });
});
