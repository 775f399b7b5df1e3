import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CachedFile, FileCache } from '../../../src/publishing/downloads/file-cache.js';

const file = (bytes: number, version = 'v1'): CachedFile => ({
  version,
  checkedAt: Number.NEGATIVE_INFINITY,
  checkedChanges: -1,
  data: Buffer.alloc(bytes),
  size: bytes,
  lastModifiedMs: 0,
  etag: '"x"',
  lastModified: '',
  headers: {},
  full: {},
});

/** Each entry is charged a fixed 1 KiB beside its bytes. */
const K = 1024;

test('the small-file cache stays within its byte budget, oldest out first', () => {
  const cache = new FileCache(100 + 2 * K);
  cache.set('a', file(40));
  cache.set('b', file(40));
  cache.set('c', file(40));
  assert.equal(cache.get('a'), undefined, 'the oldest left to make room');
  assert.ok(cache.get('b') && cache.get('c'));
  assert.equal(cache.bytes, 80 + 2 * K);
  cache.set('b', file(10, 'v2'));
  assert.equal(cache.get('b')?.version, 'v2');
  assert.equal(cache.bytes, 50 + 2 * K, 'a replaced entry no longer counts');
  cache.set('huge', file(101 + 2 * K));
  assert.equal(cache.get('huge'), undefined, 'larger than the whole budget: not kept');
  assert.equal(cache.bytes, 50 + 2 * K);
  cache.delete('c');
  cache.delete('c');
  assert.equal(cache.bytes, 10 + K);
});

test('many tiny files are bounded by the per-entry charge, not only by their bytes', () => {
  const cache = new FileCache(64 * K);
  for (let i = 0; i < 1000; i++) cache.set(`f${i}`, file(1));
  assert.ok(cache.bytes <= 64 * K);
  assert.equal(cache.get('f999')?.data.length, 1);
  assert.equal(cache.get('f0'), undefined);
});

test('a freshness check serves further requests within its bound while the change count stays', async () => {
  const cache = new FileCache(64 * K, 60 * 60_000);
  cache.set('a', file(10, 'v1'));
  let stored = 'v1';
  let checks = 0;
  const versionOf = async () => {
    checks++;
    return stored;
  };
  const first = await cache.current('a', versionOf, 7);
  assert.equal(first?.version, 'v1');
  for (let i = 0; i < 5; i++) assert.equal(cache.current('a', versionOf, 7), first, 'answered at once');
  assert.equal(checks, 1);
  stored = 'v2';
  assert.equal(cache.current('a', versionOf, 7), first, 'a change from outside is not seen within the bound');
  assert.equal(await cache.current('a', versionOf, 8), null, 'a change through this process is');
  assert.equal(checks, 2);
  assert.equal(cache.get('a'), undefined, 'the stale entry is gone');
  assert.equal(cache.current('a', versionOf, 8), null);
});

test('past the bound every request checks again', async () => {
  const cache = new FileCache(64 * K, 0);
  cache.set('a', file(10, 'v1'));
  let checks = 0;
  const versionOf = async () => {
    checks++;
    return 'v1';
  };
  for (let i = 0; i < 3; i++) assert.equal((await cache.current('a', versionOf, 0))?.version, 'v1');
  assert.equal(checks, 3);
});
