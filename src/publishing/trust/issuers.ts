import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey } from 'jose';

/** How long a discovery document is used before it is read again (keys have their own cache). */
const DISCOVERY_TTL_MS = 60 * 60_000;
/** Failed discovery reads are retried no sooner than this: a down issuer is not hammered. */
const DISCOVERY_RETRY_MS = 10_000;
const FETCH_TIMEOUT_MS = 5000;
/**
 * Largest discovery document or JWKS read (GitHub's are under 2 KiB): a broken or hostile
 * issuer streaming for the whole time limit must not fill the memory of the web part.
 */
export const MAX_ISSUER_DOCUMENT_BYTES = 256 * 1024;

/**
 * fetch() whose answer body is read here, up to MAX_ISSUER_DOCUMENT_BYTES (a TypeError past
 * that, as fetch gives for a broken connection), and handed on as a new Response.
 */
async function boundedFetch(url: string | URL, init: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  const declared = Number(res.headers.get('content-length') ?? 0);
  const tooLarge = () => new TypeError(`the answer of ${String(url)} is larger than ${MAX_ISSUER_DOCUMENT_BYTES} bytes`);
  if (declared > MAX_ISSUER_DOCUMENT_BYTES) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (res.body) {
    const reader = res.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_ISSUER_DOCUMENT_BYTES) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  return new Response(res.status === 204 || res.status === 304 ? null : Buffer.concat(chunks), { status: res.status, headers: res.headers });
}

/** https, or http on a loopback address (config.ts refuses other issuers at start-up). */
export function allowedOidcUrl(raw: string): boolean {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return false;
  }
  if (u.protocol === 'https:') return true;
  const host = u.hostname.replace(/^\[|\]$/g, '');
  return u.protocol === 'http:' && (host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host));
}

export interface IssuerKeysOptions {
  /**
   * How soon after a JWKS read an unknown `kid` may read it again (jose's cooldown). Small, so a
   * key the issuer just rotated in is found on the next token; the failure limiter bounds how
   * often one address can make us read.
   */
  jwksCooldownMs?: number;
  /** How long a JWKS read serves tokens whose `kid` it knows. */
  jwksMaxAgeMs?: number;
}

/**
 * The signing keys of OIDC issuers, found through each issuer's discovery document
 * (OpenID Connect Discovery 1.0 §4: `<issuer>/.well-known/openid-configuration` → `jwks_uri`)
 * and read with jose's remote JWKS, which caches them and reads again for an unknown `kid`.
 */
export function issuerKeys(options: IssuerKeysOptions = {}) {
  const cache = new Map<string, { keys: JWTVerifyGetKey; jwksUri: string; until: number } | { failedUntil: number; error: Error }>();

  async function discover(issuer: string): Promise<string> {
    const res = await boundedFetch(`${issuer}/.well-known/openid-configuration`, {
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
      redirect: 'error',
      headers: { accept: 'application/json' },
    });
    if (!res.ok) throw new Error(`the issuer's discovery document answered ${res.status}`);
    const doc = (await res.json()) as { issuer?: unknown; jwks_uri?: unknown };
    // §4.3: the document's issuer must be the one it was read from.
    if (doc.issuer !== issuer) throw new Error('the discovery document names another issuer');
    if (typeof doc.jwks_uri !== 'string' || !allowedOidcUrl(doc.jwks_uri)) throw new Error('the discovery document has no usable https jwks_uri');
    return doc.jwks_uri;
  }

  return {
    /** The key resolver of `issuer`; throws when its discovery document cannot be read. */
    async keysOf(issuer: string): Promise<JWTVerifyGetKey> {
      const now = Date.now();
      const hit = cache.get(issuer);
      if (hit && 'keys' in hit && hit.until > now) return hit.keys;
      if (hit && 'failedUntil' in hit && hit.failedUntil > now) throw hit.error;
      try {
        const jwksUri = await discover(issuer);
        // The same resolver while the document still names the same keys: its key cache survives.
        const keys =
          hit && 'keys' in hit && hit.jwksUri === jwksUri
            ? hit.keys
            : createRemoteJWKSet(new URL(jwksUri), {
                timeoutDuration: FETCH_TIMEOUT_MS,
                cooldownDuration: options.jwksCooldownMs ?? 1000,
                cacheMaxAge: options.jwksMaxAgeMs ?? 10 * 60_000,
                [customFetch]: boundedFetch,
              });
        cache.set(issuer, { keys, jwksUri, until: now + DISCOVERY_TTL_MS });
        return keys;
      } catch (e) {
        // A previous document stays in use while the issuer is briefly unreachable.
        if (hit && 'keys' in hit) {
          cache.set(issuer, { ...hit, until: now + DISCOVERY_RETRY_MS });
          return hit.keys;
        }
        const error = e instanceof Error ? e : new Error(String(e));
        cache.set(issuer, { failedUntil: now + DISCOVERY_RETRY_MS, error });
        throw error;
      }
    },
  };
}

export type IssuerKeys = ReturnType<typeof issuerKeys>;
