import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CredentialCache, CredentialEpoch } from '../../src/runner/auth/credential-cache.js';

test('the epoch is shared through the file beside the database and only grows', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pier-epoch-'));
  const a = CredentialEpoch.forDatabase(path.join(dir, 'runner.sqlite'));
  const b = CredentialEpoch.forDatabase(path.join(dir, 'runner.sqlite'));
  const start = a.current()!;
  b.bump();
  assert.equal(a.current(), start + 1, 'a bump by another opener is seen at once');
  a.bump();
  assert.equal(b.current(), start + 2);
  a.close();
  b.close();
  assert.equal(CredentialEpoch.forDatabase('postgres://x@localhost/db').current(), null, 'no caching on PostgreSQL');
  fs.rmSync(dir, { recursive: true, force: true });
});

test('entries live only while their epoch is current; late fills from an older epoch are dropped', () => {
  const cache = new CredentialCache<string>();
  cache.set('k', 'v1', 5);
  assert.equal(cache.get('k', 5), 'v1');
  assert.equal(cache.get('k', 6), undefined, 'a newer epoch empties the cache');
  cache.set('late', 'read-before-the-change', 5);
  assert.equal(cache.get('late', 6), undefined, 'a value read at an older epoch is not kept');
  assert.equal(cache.get('k', null), undefined);
  cache.set('k', 'v2', null);
  assert.equal(cache.get('k', 6), undefined, 'nothing is stored without an epoch');
  const small = new CredentialCache<number>(2);
  small.set('a', 1, 1);
  small.set('b', 2, 1);
  small.set('c', 3, 1);
  assert.equal(small.get('a', 1), undefined, 'bounded: the oldest entry goes');
  assert.equal(small.get('c', 1), 3);
});
