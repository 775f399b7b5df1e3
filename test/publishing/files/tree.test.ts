import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { checkKey, StorageKeyError } from '../../../src/infra/storage.js';
import { localStorage } from '../../../src/infra/storage-local.js';
import { creationProblem, isLabel, resolveTreePath, TreePathError } from '../../../src/publishing/files/tree.js';
import { tempDir } from '../../helpers/db.js';

test('client paths resolve like a chroot: .. stops at the root, only the three folders exist', () => {
  assert.deepEqual(resolveTreePath('/'), { kind: 'root' });
  assert.deepEqual(resolveTreePath('.'), { kind: 'root' });
  assert.deepEqual(resolveTreePath('/../..'), { kind: 'root' });
  assert.deepEqual(resolveTreePath('assets'), { kind: 'area', area: 'assets', path: 'assets' });
  assert.deepEqual(resolveTreePath('/update-site/5.4/../5.5//x.jar'), {
    kind: 'inside',
    area: 'update-site',
    path: 'update-site/5.5/x.jar',
    segments: ['5.5', 'x.jar'],
  });
  assert.deepEqual(resolveTreePath('/assets/../../../assets/a'), { kind: 'inside', area: 'assets', path: 'assets/a', segments: ['a'] });
  for (const [raw, reason] of [
    ['/etc/passwd', 'outside'],
    ['../../etc/passwd', 'outside'],
    ['/assets/a\u0000b', 'invalid'],
    ['/assets/..\\..\\x', 'invalid'],
    ['/assets/a\nb', 'invalid'],
    [`/assets/${'a'.repeat(256)}`, 'invalid'],
    [`/assets/${'abcdefgh/'.repeat(120)}x`, 'invalid'],
    ['/assets/.pier-tmp-0011', 'invalid'],
  ] as const) {
    assert.throws(() => resolveTreePath(raw), (e: Error) => e instanceof TreePathError && e.reason === reason, raw);
  }
});

test('update-site holds only label folders and <label>.zip archives', () => {
  const problem = (p: string, kind: 'file' | 'dir') => creationProblem(resolveTreePath(p), kind);
  assert.equal(problem('/update-site/5.4', 'dir'), null);
  assert.equal(problem('/update-site/5.4/plugins/a.jar', 'file'), null);
  assert.equal(problem('/update-site/1.2.0-rc_1.zip', 'file'), null);
  assert.equal(problem('/update-site/5.4.zip.filepart', 'file'), null);
  assert.match(problem('/update-site/readme.txt', 'file') ?? '', /only <label>/);
  assert.match(problem('/update-site/bad label', 'dir') ?? '', /not a valid label/);
  assert.match(problem('/update-site/bad label/x', 'file') ?? '', /not a valid label/);
  assert.match(problem('/', 'dir') ?? '', /fixed/);
  assert.match(problem('/assets', 'dir') ?? '', /fixed/);
  assert.equal(problem('/assets/any name (1).png', 'file'), null);
  assert.equal(isLabel('..'), false);
  assert.equal(isLabel('5.4'), true);
});

test('property: no client path resolves outside the three folders or to a reserved name', () => {
  const segment = fc.oneof(fc.constantFrom('..', '.', '', 'assets', 'update-site', 'workflows', 'etc', '.pier-tmp-1', '%2e%2e'), fc.string({ maxLength: 12 }));
  fc.assert(
    fc.property(fc.array(segment, { maxLength: 12 }), fc.boolean(), (segs, absolute) => {
      const raw = (absolute ? '/' : '') + segs.join('/');
      let p: ReturnType<typeof resolveTreePath>;
      try {
        p = resolveTreePath(raw);
      } catch (e) {
        assert.ok(e instanceof TreePathError);
        return;
      }
      if (p.kind === 'root') return;
      const parts = p.path.split('/');
      assert.ok(['update-site', 'assets', 'workflows'].includes(parts[0] as string));
      for (const s of parts) {
        assert.ok(s !== '' && s !== '.' && s !== '..' && !s.startsWith('.pier-') && !s.includes('\\') && !s.includes('\0'));
      }
      // Every resolved path is a valid storage key below a product folder.
      checkKey(`prod/${p.path}`);
    }),
    { numRuns: 2000 },
  );
});

test('storage keys cannot leave the root', async () => {
  const root = tempDir('pier-storage-');
  const storage = localStorage(root);
  for (const bad of ['', '/abs', 'a/../b', 'a/./b', 'a//b', 'a\\b', 'a/\u0000', '.pier-tmp-x', 'a/.pier-x']) {
    assert.throws(() => checkKey(bad), StorageKeyError, bad);
    await assert.rejects(storage.stat(bad), StorageKeyError);
  }
  // A symbolic link planted in the folder is neither read nor listed.
  fs.mkdirSync(path.join(root, 'p'));
  fs.symlinkSync('/etc/passwd', path.join(root, 'p', 'link'));
  assert.equal(await storage.openRead('p/link'), null);
  assert.equal(await storage.stat('p/link'), null);
  assert.deepEqual(await storage.list('p'), []);
  fs.rmSync(root, { recursive: true, force: true });
});
