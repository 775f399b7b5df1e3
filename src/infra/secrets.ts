import { createHash, hash as cryptoHash, randomBytes, randomUUID, scrypt, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(bytes: Uint8Array): string {
  let n = BigInt(`0x${Buffer.from(bytes).toString('hex') || '0'}`);
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out;
}

function checksum(body: string): string {
  // Six base62 characters of the CRC32 let scanners recognise a real token offline (GitHub's scheme).
  let n = crc32(body) >>> 0;
  let out = '';
  for (let i = 0; i < 6; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** A secret token: `prefix` + 43 base62 chars (256 random bits, padded) + 6-char CRC32 checksum. */
export function generateToken(prefix: string): string {
  const body = `${prefix}${base62(randomBytes(32)).padStart(43, '0')}`;
  return `${body}${checksum(body)}`;
}

/** True when the token carries the prefix and a matching checksum; cheap pre-check before any lookup. */
export function hasValidChecksum(token: string, prefix: string): boolean {
  if (!token.startsWith(prefix) || token.length !== prefix.length + 49) return false;
  // The checksum is public (anyone can compute it), so a plain comparison leaks nothing.
  return checksum(token.slice(0, -6)) === token.slice(-6);
}

export function sha256(value: string): string {
  // One-shot crypto.hash (Node >= 20.12) is about 3x cheaper than a Hash object; tokens are
  // hashed on every authenticated request.
  return typeof cryptoHash === 'function' ? cryptoHash('sha256', value, 'hex') : createHash('sha256').update(value).digest('hex');
}

/** A random password of `bytes` random bytes in base62 (24 bytes = 192 bits). */
export function generatePassword(bytes = 24): string {
  return base62(randomBytes(bytes));
}

export function randomId(bytes = 8): string {
  return randomBytes(bytes).toString('hex');
}

export { randomUUID };

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    // Still spend the comparison so the length check is not a timing oracle for the content.
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 };

function scryptAsync(password: string, salt: Buffer, N: number, r: number, p: number, keylen: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keylen, { N, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** `scrypt$N$r$p$salt$hash` with a per-password 16-byte salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, SCRYPT.N, SCRYPT.r, SCRYPT.p, SCRYPT.keylen);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await scryptAsync(password, Buffer.from(salt, 'base64'), Number(n), Number(r), Number(p), expected.length);
  return timingSafeEqual(key, expected);
}
