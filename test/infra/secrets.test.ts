import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FailureLimiter } from '../../src/infra/failure-limiter.js';
import {
  constantTimeEqual,
  generatePassword,
  generateToken,
  hasValidChecksum,
  hashPassword,
  sha256,
  verifyPassword,
} from '../../src/infra/secrets.js';

test('tokens carry the prefix, 256 random bits and a checksum that catches typos', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const t = generateToken('pier_et_');
    assert.match(t, /^pier_et_[0-9A-Za-z]{49}$/);
    assert.ok(hasValidChecksum(t, 'pier_et_'));
    assert.ok(!hasValidChecksum(t, 'rnr_pat_'));
    seen.add(t);
  }
  assert.equal(seen.size, 200);
  const t = generateToken('pier_et_');
  fc.assert(
    fc.property(fc.integer({ min: 8, max: t.length - 1 }), fc.constantFrom(...'0123456789abcXYZ'), (i, ch) => {
      fc.pre(t[i] !== ch);
      return !hasValidChecksum(t.slice(0, i) + ch + t.slice(i + 1), 'pier_et_');
    }),
  );
});

test('passwords: at least 128 bits, scrypt with a per-password salt, verified in constant time', async () => {
  const pw = generatePassword();
  assert.ok(pw.length >= 22);
  const a = await hashPassword(pw);
  const b = await hashPassword(pw);
  assert.notEqual(a, b, 'salted');
  assert.match(a, /^scrypt\$16384\$8\$1\$/);
  assert.ok(!a.includes(pw));
  assert.equal(await verifyPassword(pw, a), true);
  assert.equal(await verifyPassword(`${pw}x`, a), false);
  assert.equal(await verifyPassword(pw, 'garbage'), false);
  assert.equal(sha256('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(constantTimeEqual('abc', 'abc'), true);
  assert.equal(constantTimeEqual('abc', 'abd'), false);
  assert.equal(constantTimeEqual('abc', 'abcd'), false);
});

test('failure limiter bans after N failures and doubles repeat bans', () => {
  let now = 0;
  const l = new FailureLimiter({ maxFailures: 3, windowMs: 10_000, banMs: 5_000, now: () => now });
  assert.equal(l.fail('a'), 0);
  assert.equal(l.fail('a'), 0);
  assert.equal(l.retryAfter('a'), 0);
  assert.equal(l.fail('a'), 5);
  assert.equal(l.retryAfter('a'), 5);
  assert.equal(l.retryAfter('b'), 0);
  now += 5_001;
  assert.equal(l.retryAfter('a'), 0);
  l.fail('a');
  l.fail('a');
  assert.equal(l.fail('a'), 10);
  // failures outside the window do not count
  now += 100_000;
  l.fail('c');
  now += 20_000;
  l.fail('c');
  now += 20_000;
  assert.equal(l.fail('c'), 0);
});

test('failure limiter memory stays bounded', () => {
  const l = new FailureLimiter({ maxFailures: 3, windowMs: 10_000, banMs: 5_000, maxKeys: 100 });
  for (let i = 0; i < 1000; i++) l.fail(`k${i}`);
  assert.ok((l as unknown as { entries: Map<string, unknown> }).entries.size <= 100);
});
