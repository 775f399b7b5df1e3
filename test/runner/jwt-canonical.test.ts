// Session tokens are accepted only as issued (runner/auth/jwt.ts CANONICAL_TOKEN): jose decodes a
// signature spelled with spaces, `+`/`/`, padding or another last character to the same bytes, and
// each spelling would have verified and taken its own entry in the verified-token cache, so one
// session could fill it. The exact token keeps working.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { EXPIRED, JwtSessions } from '../../src/runner/auth/jwt.js';

test('only the issued spelling of a session token verifies', async () => {
  const jwt = new JwtSessions('a-test-secret-that-is-long-enough-0123456789', 'http://runner.test', () => new Date('2030-01-01T00:00:00Z'));
  const { token } = await jwt.issue('user-1', 3);
  assert.deepEqual(await jwt.verify(token), { sub: 'user-1', sv: 3 });
  const [header, payload, signature] = token.split('.') as [string, string, string];
  const lastIndex = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.indexOf(signature.at(-1)!);
  const sameBytes = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'[lastIndex + 1]!;
  const variants = [
    `${header}.${payload}.${signature.slice(0, 10)} ${signature.slice(10)}`,
    `${header}.${payload}.${signature}=`,
    `${header}.${payload}.${signature.replace(/-/g, '+').replace(/_/g, '/')}${/[-_]/.test(signature) ? '' : '+'}`,
    `${header}.${payload}.${signature.slice(0, -1)}${sameBytes}`,
    ` ${token}`,
    `${token}.`,
    `${header}.${payload}.${signature}${'A'.repeat(4)}`,
    `${header}.${payload}${' '.repeat(3000)}.${signature}`,
  ];
  for (const v of variants) assert.equal(await jwt.verify(v), null, JSON.stringify(v));
  assert.deepEqual(await jwt.verify(token), { sub: 'user-1', sv: 3 });
  assert.notEqual(await jwt.verify(token), EXPIRED);
});

test('property: any change to an issued token is refused', async () => {
  const jwt = new JwtSessions('a-test-secret-that-is-long-enough-0123456789', 'http://runner.test', () => new Date('2030-01-01T00:00:00Z'));
  const { token } = await jwt.issue('user-2', 1);
  await fc.assert(
    fc.asyncProperty(fc.nat({ max: token.length - 1 }), fc.string({ minLength: 1, maxLength: 3 }), async (at, insert) => {
      const changed = token.slice(0, at) + insert + token.slice(at);
      assert.equal(await jwt.verify(changed), null);
    }),
    { numRuns: 300 },
  );
});
