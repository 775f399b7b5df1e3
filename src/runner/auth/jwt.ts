import fs from 'node:fs';
import path from 'node:path';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { randomBytes } from 'node:crypto';
import type { SettingsRepository } from '../settings/repository.js';

/** Web sessions last exactly 7 days (spec area B, Limits: "JWT bearer token lifetime 7 days"). */
export const JWT_LIFETIME_SECONDS = 7 * 24 * 60 * 60;

/** A token signed with our key whose lifetime has ended: genuine, not a guess. */
export const EXPIRED = 'expired';

/**
 * The only spelling of a token this server issues: three base64url segments without padding
 * (RFC 7515 §2, §7.1), the HS256 signature 32 bytes, so 43 characters whose last one carries no
 * stray bits. jose decodes more leniently (spaces, `+`/`/`, padding, any last character); each
 * such spelling of a valid signature would verify and take its own place in the cache below, so
 * one session could fill it. Anything else is refused before a signature check.
 */
const CANONICAL_TOKEN = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$/;
/** Far above a session token (~250 characters); a longer header is refused without a look. */
const MAX_TOKEN_LENGTH = 2048;

export interface SessionClaims {
  sub: string;
  /** The user's session epoch when the token was issued; a password change bumps it. */
  sv: number;
}

export class JwtSessions {
  /**
   * Imported once: handing jose raw bytes makes it import the key on every call, which doubles
   * the cost of verifying (measured in bench/runner-auth.ts).
   */
  private readonly key: Promise<CryptoKey>;

  constructor(
    secret: string | Uint8Array,
    private readonly issuer: string,
    private readonly now: () => Date,
  ) {
    const raw = new Uint8Array(typeof secret === 'string' ? new TextEncoder().encode(secret) : secret);
    this.key = crypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  }

  async issue(userId: string, sessionEpoch: number): Promise<{ token: string; expiresAt: string }> {
    const iat = Math.floor(this.now().getTime() / 1000);
    const exp = iat + JWT_LIFETIME_SECONDS;
    const token = await new SignJWT({ sv: sessionEpoch })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(userId)
      .setIssuer(this.issuer)
      .setAudience(this.issuer)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(await this.key);
    return { token, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /**
   * An anti-forgery token for a form: HMAC-SHA256 of `purpose` and `value` (the session token,
   * or a login form's nonce) under the session key, so only this server can make one and it
   * belongs to that one session (OWASP CSRF prevention: synchronizer token bound to the
   * session). The NUL separator never occurs in a JWT's signing input, so no token made here is
   * a JWT signature.
   */
  async formToken(purpose: string, value: string): Promise<string> {
    const mac = await crypto.subtle.sign('HMAC', await this.key, new TextEncoder().encode(`${purpose}\0${value}`));
    return Buffer.from(mac).toString('base64url');
  }

  /**
   * Verifies signature, issuer, audience and expiry against the injected clock. The algorithm
   * is pinned to HS256: `alg: none` and RS/ES tokens (algorithm confusion) never verify.
   * Returns null for any invalid token, EXPIRED for one of ours that has expired.
   */
  async verify(token: string): Promise<SessionClaims | typeof EXPIRED | null> {
    if (token.length > MAX_TOKEN_LENGTH || !CANONICAL_TOKEN.test(token)) return null;
    const known = this.verifyKnown(token);
    if (known !== undefined) return known;
    const claims = await this.verifyWithJose(token);
    if (claims === EXPIRED || claims === null) return claims;
    this.remember(token, claims.claims, claims.exp);
    return claims.claims;
  }

  /**
   * The answer for a token whose signature was checked before, without waiting: its claims,
   * EXPIRED once it has expired, or undefined for a token not seen yet (then call `verify`).
   */
  verifyKnown(token: string): SessionClaims | typeof EXPIRED | undefined {
    const cached = this.verified.get(signatureOf(token));
    // The whole token must be the one verified: the signature only finds the entry. Both strings
    // are the caller's own (it sent this signature), so comparing them tells it nothing new.
    if (!cached || cached.token !== token) return undefined;
    // Same rule as jose with clockTolerance 0: expired once exp <= now.
    if (cached.exp > Math.floor(this.now().getTime() / 1000)) return cached.claims;
    this.verified.delete(signatureOf(token));
    return EXPIRED;
  }

  /**
   * Signature checks of tokens already seen, by the token's signature segment. Whether a string
   * carries a valid HS256 signature under our key never changes, so caching it keeps no stale
   * data; expiry is still checked against the clock and the session epoch against the user on
   * every request. jose's WebCrypto HMAC costs ~100 µs a call, more than the rest of a request
   * (bench/runner-auth.ts). Keyed by the 43-character signature rather than the whole ~250
   * characters: a Map hashes its key on every look-up, and that took ~0.4 µs a request.
   */
  private readonly verified = new Map<string, { token: string; claims: SessionClaims; exp: number }>();

  private remember(token: string, claims: SessionClaims, exp: number): void {
    if (this.verified.size >= 10_000) {
      // Drop the oldest entry; Map iterates in insertion order.
      this.verified.delete(this.verified.keys().next().value as string);
    }
    this.verified.set(signatureOf(token), { token, claims, exp });
  }

  private async verifyWithJose(token: string): Promise<{ claims: SessionClaims; exp: number } | typeof EXPIRED | null> {
    try {
      const { payload } = await jwtVerify(token, await this.key, {
        algorithms: ['HS256'],
        issuer: this.issuer,
        audience: this.issuer,
        currentDate: this.now(),
        clockTolerance: 0,
        requiredClaims: ['sub', 'exp', 'iat'],
      });
      if (typeof payload.sub !== 'string' || typeof payload.sv !== 'number') return null;
      // Tokens are issued with exactly this lifetime; a longer one was not made by us.
      if ((payload.exp ?? 0) - (payload.iat ?? 0) > JWT_LIFETIME_SECONDS) return null;
      return { claims: { sub: payload.sub, sv: payload.sv }, exp: payload.exp as number };
    } catch (e) {
      // jose checks the claims only after the signature: an expired token was made by us.
      if (e instanceof joseErrors.JWTExpired) return EXPIRED;
      if (e instanceof joseErrors.JOSEError || e instanceof TypeError) return null;
      throw e;
    }
  }
}

/** The JWS signature segment (RFC 7515 §7.1: the part after the last '.'). */
function signatureOf(token: string): string {
  return token.slice(token.lastIndexOf('.') + 1);
}

/**
 * JWT_SECRET, or a secret generated once and kept in the runner database, so every instance on
 * one database signs and accepts the same sessions. A secret an older version generated in
 * `<dataDir>/runner-jwt.secret` is adopted (sessions survive the upgrade).
 */
export async function loadJwtSecret(configured: string | null, settings: SettingsRepository, dataDir: string): Promise<Uint8Array> {
  if (configured) return new TextEncoder().encode(configured);
  const secret = await settings.getOrCreate(JWT_SECRET_KEY, () => legacySecret(dataDir) ?? randomBytes(48).toString('base64url'));
  return new TextEncoder().encode(secret);
}

export const JWT_SECRET_KEY = 'jwt_secret';

function legacySecret(dataDir: string): string | null {
  try {
    const existing = fs.readFileSync(path.join(dataDir, 'runner-jwt.secret'), 'utf8').trim();
    return existing.length >= 43 ? existing : null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}
