import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CachedFile, FileCache } from '../../../src/publishing/downloads/file-cache.js';

const file = (bytes: number, version = 'v1'): CachedFile => ({
  version,
  checkedTurn: -1,
  data: Buffer.alloc(bytes),
  size: bytes,
  mtimeMs: 0,
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

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('one freshness check serves a whole loop turn; the next turn checks again and drops a stale entry', async () => {
  const cache = new FileCache(64 * K);
  cache.set('a', file(10, 'v1'));
  let stored = 'v1';
  let checks = 0;
  const versionOf = async () => {
    checks++;
    return stored;
  };
  const first = await cache.current('a', versionOf);
  assert.equal(first?.version, 'v1');
  // Later requests of the same turn: answered at once, from the same check.
  for (let i = 0; i < 5; i++) assert.equal(cache.current('a', versionOf), first);
  assert.equal(checks, 1);
  await nextTurn();
  stored = 'v2';
  assert.equal(await cache.current('a', versionOf), null, 'a new turn checks again and sees the replacement');
  assert.equal(checks, 2);
  assert.equal(cache.get('a'), undefined, 'the stale entry is gone');
  assert.equal(cache.current('a', versionOf), null);
});

test('a check answered in a later turn is used for its own request only', async () => {
  const cache = new FileCache(64 * K);
  cache.set('a', file(10, 'v1'));
  let checks = 0;
  // A storage that stats asynchronously: its answer arrives in a later turn than the request.
  const slowVersionOf = async () => {
    checks++;
    await nextTurn();
    return 'v1';
  };
  assert.equal((await cache.current('a', slowVersionOf))?.version, 'v1');
  const again = cache.current('a', slowVersionOf);
  assert.ok(again instanceof Promise, 'a request of this later turn is checked anew');
  await again;
  assert.equal(checks, 2);
});
