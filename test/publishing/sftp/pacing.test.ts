import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dialects, tempDir } from '../../helpers/db.js';
import { generateSite, openSshSftp, ssh2Sftp, type Stack, startStack } from './stack.js';

const stat = (sftp: import('ssh2').SFTPWrapper, p: string) =>
  new Promise<string>((resolve) => sftp.stat(p, (e) => resolve(e ? 'missing' : 'found')));

describe('SFTP request pacing', () => {
  const [sqlite] = dialects();
  let drop: () => Promise<void>;
  let stack: Stack;

  before(async () => {
    const db = await sqlite!.create();
    drop = db.drop;
    // A small budget, so a test client goes over it with a few hundred requests.
    stack = await startStack(db.url, { sftp: { pacing: { rate: 200, burst: 50 } } });
  });
  after(async () => {
    await stack.close();
    await drop();
  });

  test('a session over its budget has its requests deferred, all answered; another product is not slowed', async () => {
    const hostile = (await stack.register('pacing-hostile')).sftp;
    const quiet = (await stack.register('pacing-quiet')).sftp;
    const a = await ssh2Sftp(stack.sftp.port, hostile.username, hostile.password);
    const b = await ssh2Sftp(stack.sftp.port, quiet.username, quiet.password);
    try {
      // Refusals (missing files) cost more than successes: 300 of them are far over 50 + rate.
      const flood = Promise.all(Array.from({ length: 300 }, (_, i) => stat(a.sftp, `/assets/none-${i}`)));
      const calm: string[] = [];
      for (let i = 0; i < 10; i++) calm.push(await stat(b.sftp, '/assets'));
      const answers = await flood;
      assert.deepEqual(new Set(answers), new Set(['missing']), 'delayed, never refused for pacing');
      assert.equal(answers.length, 300);
      assert.deepEqual(calm, Array(10).fill('found'));
      assert.ok(stack.sftp.deferredRequests('pacing-hostile') > 0, 'the flood waited for its turn');
      assert.equal(stack.sftp.deferredRequests('pacing-quiet'), 0, 'the other product never waited');
    } finally {
      a.end();
      b.end();
    }
  });
});

describe('SFTP request pacing with the default budget', () => {
  const [sqlite] = dialects();
  let drop: () => Promise<void>;
  let stack: Stack;

  before(async () => {
    const db = await sqlite!.create();
    drop = db.drop;
    stack = await startStack(db.url);
  });
  after(async () => {
    await stack.close();
    await drop();
  });

  test('OpenSSH put -r of a few hundred files is never deferred', async () => {
    const creds = (await stack.register('pacing-put')).sftp;
    const dir = tempDir('pier-pacing-site-');
    const files = generateSite(path.join(dir, 'site'), 300);
    const r = await openSshSftp(stack.sftp.port, creds, [`lcd ${dir}`, 'cd /update-site', 'put -r site']);
    assert.equal(r.code, 0, r.stderr);
    const labels = await stack.files.listLabels('pacing-put');
    assert.equal(labels.map((l) => l.label).join(), 'site');
    assert.ok(files.length === 300);
    assert.equal(stack.sftp.deferredRequests('pacing-put'), 0);
  });
});
