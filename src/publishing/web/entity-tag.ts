import { createHash } from 'node:crypto';

/** A strong entity tag (RFC 9110 §8.8.3) of an answer's bytes: its SHA-256, shortened. */
export function entityTag(body: string | Uint8Array): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}
