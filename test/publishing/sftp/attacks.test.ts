import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import ssh2 from 'ssh2';
import type { IssuedCredentials } from '../../../src/publishing/products/service.js';
import { dialects } from '../../helpers/db.js';
import { fetchBytes, snapshot, ssh2Sftp, type Stack, startStack } from './stack.js';

const { STATUS_CODE } = ssh2.utils.sftp;
const { NO_SUCH_FILE, PERMISSION_DENIED, FAILURE } = STATUS_CODE;

type Sftp = ssh2.SFTPWrapper;

/** The SFTP status of a request (0 = OK) and the server's message. */
function status(start: (cb: (err: (Error & { code?: number }) | null | undefined) => void) => void): Promise<{ code: number; message: string }> {
  return new Promise((resolve) => {
    start((err) => resolve(err ? { code: Number(err.code ?? -1), message: err.message } : { code: 0, message: '' }));
  });
}

const writeFile = (sftp: Sftp, p: string, data: Buffer | string) => status((cb) => sftp.writeFile(p, data, cb));

/** The storage folder without the host keys (they are not part of any product's tree). */
function tree(stack: Stack): Record<string, string> {
  return Object.fromEntries(Object.entries(snapshot(stack.storageDir)).filter(([k]) => !k.startsWith('.pier-host-keys')));
}

for (const target of dialects()) {
  describe(`SFTP attack suite on ${target.name}`, () => {
    let stack: Stack;
    let drop: () => Promise<void>;
    let victim: IssuedCredentials['sftp'];
    let other: IssuedCredentials['sftp'];
    let session: { sftp: Sftp; end(): void };

    before(async () => {
      const db = await target.create();
      drop = db.drop;
      stack = await startStack(db.url, { env: { PIER_SFTP_MAX_SESSIONS: '3' } });
      victim = (await stack.register('victim-ext')).sftp;
      other = (await stack.register('other-ext')).sftp;
      const o = await ssh2Sftp(stack.sftp.port, other.username, other.password);
      assert.equal((await writeFile(o.sftp, '/assets/secret.txt', 'other product secret')).code, 0);
      o.end();
      session = await ssh2Sftp(stack.sftp.port, victim.username, victim.password);
      const s = session.sftp;
      assert.equal((await status((cb) => s.mkdir('/update-site/5.4', cb))).code, 0);
      assert.equal((await writeFile(s, '/update-site/5.4/content.xml', '<repository/>')).code, 0);
      assert.equal((await writeFile(s, '/assets/a.txt', 'kept')).code, 0);
    });
    after(async () => {
      session.end();
      await stack.close();
      await drop();
    });

    test('traversal, absolute paths, NUL, backslashes and huge names in every request type are refused and change nothing', async () => {
      const s = session.sftp;
      const before = tree(stack);
      const outside = ['/etc/passwd', '../../../../etc/passwd', '/../other-ext/assets/secret.txt', '/assets/../../other-ext/assets/secret.txt', '/..'];
      const invalid = ['/assets/a\u0000b', '/assets/..\\..\\other-ext', `/assets/${'n'.repeat(256)}`, `/assets/${'deep/'.repeat(210)}x`, '/assets/.pier-tmp-1234'];
      const checks: [string, (p: string, cb: (e: Error | null | undefined) => void) => void, number[]][] = [
        ['open(r)', (p, cb) => s.open(p, 'r', (e) => cb(e)), [NO_SUCH_FILE, FAILURE]],
        ['open(w)', (p, cb) => s.open(p, 'w', (e) => cb(e)), [PERMISSION_DENIED, FAILURE]],
        ['stat', (p, cb) => s.stat(p, (e) => cb(e)), [NO_SUCH_FILE, FAILURE]],
        ['lstat', (p, cb) => s.lstat(p, (e) => cb(e)), [NO_SUCH_FILE, FAILURE]],
        ['opendir', (p, cb) => s.opendir(p, (e) => cb(e)), [NO_SUCH_FILE, FAILURE]],
        ['readlink', (p, cb) => s.readlink(p, (e) => cb(e)), [NO_SUCH_FILE, FAILURE]],
        ['mkdir', (p, cb) => s.mkdir(p, (e) => cb(e)), [PERMISSION_DENIED, FAILURE]],
        ['rmdir', (p, cb) => s.rmdir(p, (e) => cb(e)), [PERMISSION_DENIED, FAILURE]],
        ['remove', (p, cb) => s.unlink(p, (e) => cb(e)), [PERMISSION_DENIED, FAILURE]],
        ['setstat', (p, cb) => s.setstat(p, { mtime: 0, atime: 0 }, (e) => cb(e)), [NO_SUCH_FILE, FAILURE]],
        ['rename from', (p, cb) => s.rename(p, '/assets/stolen.txt', (e) => cb(e)), [PERMISSION_DENIED, FAILURE]],
        ['rename to', (p, cb) => s.rename('/assets/a.txt', p, (e) => cb(e)), [PERMISSION_DENIED, FAILURE]],
        ['symlink', (p, cb) => s.symlink(p, '/assets/link', (e) => cb(e)), [PERMISSION_DENIED]],
      ];
      for (const [name, op, allowed] of checks) {
        for (const p of [...outside, ...invalid]) {
          // `/..` is the root itself: reading it as a folder is fine, anything else is not.
          if (p === '/..' && ['stat', 'lstat', 'opendir', 'setstat'].includes(name)) continue;
          const r = await status((cb) => op(p, cb));
          assert.ok(allowed.includes(r.code), `${name} ${JSON.stringify(p.slice(0, 60))}: status ${r.code} ${r.message}`);
        }
      }
      // Outside the tree is "does not exist" for reads and "permission denied" for writes.
      assert.equal((await status((cb) => s.open('/etc/passwd', 'r', (e) => cb(e)))).code, NO_SUCH_FILE);
      assert.equal((await status((cb) => s.open('/../other-ext/assets/secret.txt', 'w', (e) => cb(e)))).code, PERMISSION_DENIED);
      assert.equal((await status((cb) => s.realpath('/../../..', (e, p) => cb(e ?? (p === '/' ? null : new Error(p)))))).code, 0);
      assert.deepEqual(tree(stack), before);
    });

    test('symlinks, writes in the root or beside the three folders, and bad labels are refused', async () => {
      const s = session.sftp;
      const before = tree(stack);
      const expect = async (what: string, start: (cb: (e: Error | null | undefined) => void) => void, code: number, message?: RegExp) => {
        const r = await status(start);
        assert.equal(r.code, code, `${what}: ${r.message}`);
        if (message) assert.match(r.message, message, what);
      };
      await expect('symlink', (cb) => s.symlink('/assets/a.txt', '/assets/link', cb), PERMISSION_DENIED, /Symbolic links/);
      await expect('file in root', (cb) => s.writeFile('/x.txt', 'x', cb), PERMISSION_DENIED);
      await expect('folder in root', (cb) => s.mkdir('/more', cb), PERMISSION_DENIED);
      await expect('remove an area', (cb) => s.rmdir('/assets', cb), PERMISSION_DENIED);
      await expect('rename an area', (cb) => s.rename('/workflows', '/assets/w', cb), PERMISSION_DENIED);
      await expect('move a file into the root', (cb) => s.rename('/assets/a.txt', '/a.txt', cb), PERMISSION_DENIED);
      await expect('loose file in update-site', (cb) => s.writeFile('/update-site/readme.txt', 'x', cb), PERMISSION_DENIED, /only <label>/);
      await expect('bad label', (cb) => s.mkdir('/update-site/bad label', cb), PERMISSION_DENIED, /not a valid label/);
      await expect('bad label archive', (cb) => s.writeFile('/update-site/a b.zip', 'x', cb), PERMISSION_DENIED);
      await expect('missing parent', (cb) => s.writeFile('/assets/no/such/dir.txt', 'x', cb), NO_SUCH_FILE);
      await expect('folder over file', (cb) => s.mkdir('/assets/a.txt', cb), FAILURE);
      await expect('non-empty rmdir', (cb) => s.rmdir('/update-site/5.4', cb), FAILURE, /not empty/);
      await expect('exclusive create of an existing file', (cb) => s.open('/assets/a.txt', 'wx', (e) => cb(e)), FAILURE);
      // The other product's files are not in this tree at all.
      await expect('other product', (cb) => s.stat('/assets/secret.txt', (e) => cb(e)), NO_SUCH_FILE);
      assert.deepEqual(tree(stack), before);
    });

    test('quota overrun fails that write with a clear message and leaves no partial file', async () => {
      await stack.fileStore.setLimits('victim-ext', { maxFileBytes: 4096, quotaBytes: 10_000, quotaFiles: 5 });
      const s = session.sftp;
      const before = tree(stack);
      let r = await writeFile(s, '/assets/big.bin', Buffer.alloc(5000));
      assert.equal(r.code, FAILURE);
      assert.match(r.message, /file too large: the limit is 4096 bytes/);
      r = await writeFile(s, '/assets/a.txt', Buffer.alloc(5000));
      assert.equal(r.code, FAILURE);
      assert.deepEqual(tree(stack), before, 'no partial or temporary file, the previous a.txt intact');
      assert.equal((await fetchBytes(`${stack.downloads.url}/assets/victim-ext/a.txt`)).body.toString(), 'kept');
      for (let i = 0; i < 2; i++) assert.equal((await writeFile(s, `/assets/f${i}.bin`, Buffer.alloc(4000))).code, 0);
      r = await writeFile(s, '/assets/f2.bin', Buffer.alloc(4000));
      assert.equal(r.code, FAILURE);
      assert.match(r.message, /storage quota exceeded/);
      assert.equal((await writeFile(s, '/assets/f2.bin', Buffer.alloc(10))).code, 0);
      r = await writeFile(s, '/assets/f3.bin', Buffer.alloc(10));
      assert.equal(r.code, FAILURE);
      assert.match(r.message, /file-count quota exceeded/);
      for (const f of ['f0.bin', 'f1.bin', 'f2.bin']) assert.equal((await status((cb) => s.unlink(`/assets/${f}`, cb))).code, 0);
      await stack.fileStore.setLimits('victim-ext', { maxFileBytes: null, quotaBytes: null, quotaFiles: null });
      assert.deepEqual(tree(stack), before);
    });

    test('parallel uploads that fit the quota one by one but not together: the later WRITE fails and keeps the previous file', async () => {
      const used = (await stack.fileStore.summary('victim-ext')).bytes;
      await stack.fileStore.setLimits('victim-ext', { quotaBytes: used + 6000 });
      const s = session.sftp;
      const before = tree(stack);
      const open = (p: string) => new Promise<Buffer>((resolve, reject) => s.open(p, 'w', (e, h) => (e ? reject(e) : resolve(h))));
      const write = (h: Buffer, data: Buffer) => status((cb) => s.write(h, data, 0, data.length, 0, cb));
      const [h1, h2] = await Promise.all([open('/assets/new.bin'), open('/assets/a.txt')]);
      assert.equal((await write(h1, Buffer.alloc(4000, 1))).code, 0);
      // Each alone fits what was free at OPEN, but open uploads share that room.
      const r = await write(h2, Buffer.alloc(4000, 2));
      assert.equal(r.code, FAILURE);
      assert.match(r.message, /storage quota exceeded: .* its uploads open now hold 4000 bytes/);
      assert.equal((await status((cb) => s.close(h1, cb))).code, 0);
      await status((cb) => s.close(h2, cb));
      assert.equal((await fetchBytes(`${stack.downloads.url}/assets/victim-ext/a.txt`)).body.toString(), 'kept');
      assert.deepEqual(Object.keys(tree(stack)).sort(), [...Object.keys(before), 'victim-ext/assets/new.bin'].sort(), 'no temporary file left');
      assert.equal((await status((cb) => s.unlink('/assets/new.bin', cb))).code, 0);
      await stack.fileStore.setLimits('victim-ext', { quotaBytes: null });
      assert.deepEqual(tree(stack), before);
    });

    test('one connection gets at most two SFTP channels', async () => {
      const client = new ssh2.Client();
      await new Promise<void>((resolve, reject) => {
        client.on('ready', () => resolve());
        client.on('error', reject);
        client.connect({ host: '127.0.0.1', port: stack.sftp.port, username: victim.username, password: victim.password, tryKeyboard: false });
      });
      try {
        const channel = () => new Promise<ssh2.SFTPWrapper>((resolve, reject) => client.sftp((err, sftp) => (err ? reject(err) : resolve(sftp))));
        const first = await channel();
        const second = await channel();
        await assert.rejects(channel(), 'the third channel is refused');
        second.end();
        await new Promise((r) => setTimeout(r, 100));
        (await channel()).end();
        first.end();
      } finally {
        client.end();
      }
    });

    test('a rotated password stops working for new logins at once; sessions per product are capped', async () => {
      const rotated = await stack.products.rotateSftpPassword('other-ext');
      await assert.rejects(ssh2Sftp(stack.sftp.port, other.username, other.password), /authentication methods failed/);
      const fresh = await ssh2Sftp(stack.sftp.port, other.username, rotated.password);
      fresh.end();
      const open = [await ssh2Sftp(stack.sftp.port, other.username, rotated.password), await ssh2Sftp(stack.sftp.port, other.username, rotated.password)];
      open.push(await ssh2Sftp(stack.sftp.port, other.username, rotated.password));
      await assert.rejects(ssh2Sftp(stack.sftp.port, other.username, rotated.password), /authentication methods failed/);
      for (const o of open) o.end();
      await new Promise((r) => setTimeout(r, 100));
      (await ssh2Sftp(stack.sftp.port, other.username, rotated.password)).end();
    });
  });
}

describe('SFTP brute force', () => {
  test('wrong passwords from one address get it banned; even the right password is then refused', async () => {
    const [sqlite] = dialects();
    const db = await sqlite!.create();
    const stack = await startStack(db.url, { failureLimits: { maxFailures: 3, banMs: 60_000 } });
    try {
      const creds = (await stack.register('brute-ext')).sftp;
      const before = tree(stack);
      for (let i = 0; i < 3; i++) {
        await assert.rejects(ssh2Sftp(stack.sftp.port, creds.username, `wrong-${i}`), /authentication methods failed/);
      }
      // Banned: the connection is closed before any authentication.
      await assert.rejects(ssh2Sftp(stack.sftp.port, creds.username, creds.password), /closed by the server|lost before handshake/);
      assert.deepEqual(tree(stack), before);
    } finally {
      await stack.close();
      await db.drop();
    }
  });
});
