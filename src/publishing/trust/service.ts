import { decodeJwt, decodeProtectedHeader, errors as joseErrors, type JWTPayload, jwtVerify } from 'jose';
import type { Config } from '../../infra/config.js';
import { AppError, ConflictError, NotFoundError, ServiceUnavailableError, UsageError, type FieldProblem } from '../../infra/errors.js';
import { constantTimeEqual, generateToken, hasValidChecksum, randomId, sha256 } from '../../infra/secrets.js';
import type { ProductsRepository } from '../products/repository.js';
import { type BindingInput, type BindingView, bindingMismatches, bindingView, CLAIMS, checkBinding } from './bindings.js';
import type { Publisher } from '../products/publisher.js';
import { type CiIdentity, ClaimProblem, githubIdentity, gitlabIdentity } from './claims.js';
import { type IssuerKeys, issuerKeys } from './issuers.js';
import { boundRef } from './refs.js';
import type { BindingRow, PublishRow, TrustRepository } from './repository.js';

export { type BindingInput, type BindingView, bindingMismatches } from './bindings.js';

export const TRUSTED_CREDENTIAL_PREFIX = 'pier_tp_';
/** Lifetime of an exchanged credential: long enough for one publish, short enough that a leaked one is soon useless. */
export const CREDENTIAL_TTL_MS = 15 * 60_000;
/**
 * How long an expired credential's row is kept: it logs nothing in and authorizes nothing, but
 * tells an SFTP session logged in with it that the credential expired (transfers in progress
 * finish) rather than was revoked (the session ends at once). A product has a few exchanges a day.
 */
export const EXPIRED_CREDENTIAL_KEPT_MS = 24 * 3_600_000;

/**
 * What an SFTP session's trusted credential is now, from its row's `expires_at` (null: the row is
 * gone, so the credential was revoked: its binding removed, or the product's secrets rotated).
 */
export function trustedCredentialState(expiresAt: string | null, now: Date): 'current' | 'expired' | 'revoked' {
  if (expiresAt === null) return 'revoked';
  return expiresAt > now.toISOString() ? 'current' : 'expired';
}

/** Clock skew allowed on `exp`, `nbf` and `iat` between the CI's issuer and us. */
export const CLOCK_SKEW_SECONDS = 60;
/**
 * Asymmetric algorithms only: GitHub signs with RS256, GitLab with RS256, some issuers with
 * ES256. `none` and HMAC (HS256) are refused before any key is looked up: with HMAC the
 * "key" would be the issuer's public key, which anyone has.
 */
const ALGORITHMS = ['RS256', 'ES256'];
/** 9999-12-31T23:59:59Z: the latest `exp` whose ISO date keeps four digits of year. */
const MAX_EXP_SECONDS = 253_402_300_799;

/** A refused ID token or exchange: problem+json naming the claim(s) (`errors[].field`). */
export class TrustRefusedError extends AppError {
  constructor(status: 401 | 403, detail: string, errors: FieldProblem[]) {
    super(status, status === 401 ? 'invalid_id_token' : 'not_trusted', status === 401 ? 'Unauthorized' : 'Forbidden', detail, errors);
    this.name = 'TrustRefusedError';
  }
}

function refuse(status: 401 | 403, claim: string, message: string): TrustRefusedError {
  return new TrustRefusedError(status, message, [{ field: claim, message }]);
}

export interface TrustedPublish {
  at: string;
  action: PublishRow['action'];
  provider: PublishRow['provider'];
  repository: string;
  workflow: string;
  ref: string;
  runId: string;
  runUrl: string | null;
  bindingId: string;
  credentialId: string;
  clientAddress: string;
  detail: Record<string, unknown> | null;
}

export interface ExchangeResult {
  token: string;
  expiresAt: string;
  productId: string;
}

/** Sortable ids: time first so rows written in the same millisecond still list in order. */
function sortableId(at: Date): string {
  return `${at.getTime().toString(36).padStart(9, '0')}${randomId(4)}`;
}

export interface TrustServiceDeps {
  repo: TrustRepository;
  products: Pick<ProductsRepository, 'find'>;
  oidc: Config['publishing']['oidc'];
  now?: () => Date;
  keys?: IssuerKeys;
}

export function trustService({ repo, products, oidc, now = () => new Date(), keys = issuerKeys() }: TrustServiceDeps) {
  async function mustFindProduct(id: string): Promise<void> {
    if (!(await products.find(id))) throw new NotFoundError(`no product "${id}"`);
  }

  /** Which configured issuer (and so provider) `iss` names; both may be one issuer in tests. */
  function providerOf(payload: JWTPayload): { provider: 'github' | 'gitlab'; issuer: string } {
    const iss = payload.iss;
    const github = iss === oidc.githubIssuer;
    const gitlab = iss === oidc.gitlabIssuer;
    if (github && gitlab) return { provider: 'project_path' in payload ? 'gitlab' : 'github', issuer: iss as string };
    if (github) return { provider: 'github', issuer: oidc.githubIssuer };
    if (gitlab) return { provider: 'gitlab', issuer: oidc.gitlabIssuer };
    throw refuse(401, 'iss', '"iss" is not a trusted CI issuer (GitHub Actions or GitLab as configured)');
  }

  /** Steps 1-3 of an exchange: the token is well formed, signed by the issuer's key, for us, current. */
  async function verifyIdToken(token: string): Promise<{ payload: JWTPayload; provider: 'github' | 'gitlab'; issuer: string }> {
    let header: ReturnType<typeof decodeProtectedHeader>;
    let unverified: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      unverified = decodeJwt(token);
    } catch {
      throw refuse(401, 'token', 'the ID token is not a signed JWT');
    }
    // RFC 8725 §3.1: the algorithm is ours to choose, never the token's.
    if (typeof header.alg !== 'string' || !ALGORITHMS.includes(header.alg)) {
      throw refuse(401, 'alg', `"alg" must be one of ${ALGORITHMS.join(', ')}`);
    }
    const { provider, issuer } = providerOf(unverified);
    let getKey: Awaited<ReturnType<IssuerKeys['keysOf']>>;
    try {
      getKey = await keys.keysOf(issuer);
    } catch {
      throw new ServiceUnavailableError(`the keys of the CI issuer ${issuer} cannot be read now; try again`, 30);
    }
    try {
      const { payload } = await jwtVerify(token, getKey, {
        issuer,
        audience: oidc.audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_SKEW_SECONDS,
        currentDate: now(),
        requiredClaims: ['exp', 'iat', 'jti'],
      });
      // jose checks that these are present, not what they hold. `exp` sets how long the token's
      // `jti` is remembered as used (an ISO date: past year 9999 it threw, a 500, and would sort
      // before today's dates); a `jti` that is no plain string would share one replay key.
      if (typeof payload.exp !== 'number' || payload.exp > MAX_EXP_SECONDS) throw refuse(401, 'exp', '"exp" is not a time before the year 10000');
      if (typeof payload.jti !== 'string' || payload.jti.length === 0 || payload.jti.length > 512) throw refuse(401, 'jti', '"jti" is not a string of 1 to 512 characters');
      return { payload, provider, issuer };
    } catch (e) {
      throw verifyProblem(e, issuer);
    }
  }

  function verifyProblem(e: unknown, issuer: string): Error {
    if (e instanceof joseErrors.JWTExpired) return refuse(401, 'exp', 'the ID token has expired');
    if (e instanceof joseErrors.JWTClaimValidationFailed) {
      const claim = e.claim || 'token';
      const message =
        claim === 'aud'
          ? `"aud" must be ${oidc.audience}`
          : claim === 'nbf'
            ? 'the ID token is not valid yet ("nbf")'
            : claim === 'iss'
              ? '"iss" does not match'
              : e.reason === 'missing'
                ? `the ID token has no "${claim}" claim`
                : `"${claim}" is not valid`;
      return refuse(401, claim, message);
    }
    if (e instanceof joseErrors.JOSEAlgNotAllowed) return refuse(401, 'alg', `"alg" must be one of ${ALGORITHMS.join(', ')}`);
    if (e instanceof joseErrors.JWKSNoMatchingKey || e instanceof joseErrors.JWKSMultipleMatchingKeys) {
      return refuse(401, 'kid', `no key of ${issuer} matches the ID token's "kid"`);
    }
    if (e instanceof joseErrors.JWSSignatureVerificationFailed) return refuse(401, 'signature', "the ID token's signature does not verify");
    if (e instanceof joseErrors.JWKSTimeout || e instanceof joseErrors.JWKSInvalid || (e instanceof Error && e.name === 'TypeError')) {
      return new ServiceUnavailableError(`the keys of the CI issuer ${issuer} cannot be read now; try again`, 30);
    }
    if (e instanceof joseErrors.JOSEError) return refuse(401, 'token', 'the ID token is not valid');
    return e instanceof Error ? e : new Error(String(e));
  }

  const service = {
    async addBinding(productId: string, input: BindingInput): Promise<BindingView> {
      await mustFindProduct(productId);
      const problems = checkBinding(input);
      if (problems.length) throw new UsageError(problems.map((p) => `--${p.field} ${p.message}`).join('; '));
      const at = now().toISOString();
      const row: BindingRow = {
        id: `tb_${randomId(5)}`,
        product_id: productId,
        provider: input.provider,
        repository: input.repository,
        repository_id: input.repositoryId,
        owner_id: input.ownerId ?? null,
        workflow: input.workflow ?? null,
        // Stored as the full ref it stands for: a bare name is a branch (trust/refs.ts).
        ref: input.ref === undefined ? null : boundRef(input.ref),
        environment: input.environment ?? null,
        created_at: at,
        owner_pinned_at: null,
        allow_unprotected: input.allowUnprotected ? 1 : 0,
      };
      await repo.addBinding(row);
      return bindingView(row);
    },

    async listBindings(productId: string): Promise<BindingView[]> {
      await mustFindProduct(productId);
      return (await repo.bindings(productId)).map(bindingView);
    },

    /** Removes the binding; credentials it issued stop working at once, SFTP sessions logged in with one end at their next check. */
    async removeBinding(productId: string, bindingId: string): Promise<void> {
      await mustFindProduct(productId);
      if (!(await repo.removeBinding(productId, bindingId))) throw new NotFoundError(`product "${productId}" has no binding "${bindingId}"`);
    },

    /**
     * `POST /api/oidc/token`: a CI's OIDC ID token for a `pier_tp_…` credential of the one
     * product whose binding it satisfies. A pipeline of checks, each refusal naming its claim.
     */
    async exchange(token: string, options: { product?: string | undefined; clientAddress: string }): Promise<ExchangeResult> {
      const { payload, provider, issuer } = await verifyIdToken(token);
      let identity: CiIdentity;
      try {
        identity = provider === 'github' ? githubIdentity(payload, issuer) : gitlabIdentity(payload, issuer);
      } catch (e) {
        if (e instanceof ClaimProblem) throw refuse(401, e.claim, e.message);
        throw e;
      }
      const claims = CLAIMS[provider];
      let candidates = await repo.candidates(provider, identity.repositoryId, identity.repository.toLowerCase());
      if (options.product !== undefined) candidates = candidates.filter((b) => b.product_id === options.product);
      if (candidates.length === 0) {
        const where = options.product !== undefined ? `product "${options.product}" is` : 'no product is';
        throw refuse(403, claims.repository, `${where} not bound to ${provider === 'github' ? 'the repository' : 'the project'} "${identity.repository}"`);
      }
      const checked = candidates.map((binding) => ({ binding, problems: bindingMismatches(binding, identity) }));
      const matches = checked.filter((c) => c.problems.length === 0);
      if (matches.length === 0) {
        // The binding closest to the token explains the refusal (the fewest claims off).
        const closest = checked.reduce((a, b) => (b.problems.length < a.problems.length ? b : a));
        throw new TrustRefusedError(403, closest.problems.map((p) => p.message).join('; '), closest.problems);
      }
      const productIds = [...new Set(matches.map((m) => m.binding.product_id))];
      if (productIds.length > 1) {
        throw new ConflictError(
          `the ID token matches the bindings of several products (${productIds.join(', ')}); name one in "product"`,
          'product_ambiguous',
        );
      }
      const binding = matches[0]!.binding;
      const at = now();
      const credentialId = randomId(8);
      const secret = generateToken(TRUSTED_CREDENTIAL_PREFIX);
      const expiresAt = new Date(at.getTime() + CREDENTIAL_TTL_MS);
      const publisher: Publisher = {
        provider,
        repository: identity.repository,
        workflow: identity.workflow,
        ref: identity.ref,
        runId: identity.runId,
        ...(identity.runUrl ? { runUrl: identity.runUrl } : {}),
        credentialId,
        bindingId: binding.id,
      };
      const exp = typeof payload.exp === 'number' ? payload.exp : Math.floor(at.getTime() / 1000);
      const outcome = await repo.exchange({
        // The issuer is part of the key: two issuers may number their tokens alike.
        usedKey: sha256(`${issuer}\u0000${String(payload.jti)}`),
        // Kept while the token could still pass the expiry check.
        usedUntil: new Date((exp + CLOCK_SKEW_SECONDS + 1) * 1000).toISOString(),
        now: at.toISOString(),
        forgetExpiredBefore: new Date(at.getTime() - EXPIRED_CREDENTIAL_KEPT_MS).toISOString(),
        ownerId: identity.ownerId,
        credential: {
          id: credentialId,
          product_id: binding.product_id,
          binding_id: binding.id,
          token_hash: sha256(secret),
          publisher: JSON.stringify(publisher),
          created_at: at.toISOString(),
          expires_at: expiresAt.toISOString(),
        },
        history: historyRow(binding.product_id, publisher, 'exchange', options.clientAddress, at, null),
      });
      if (outcome === 'replayed') throw refuse(401, 'jti', 'this ID token was already exchanged; request a new one from the CI');
      if (outcome === 'owner_mismatch') throw refuse(403, claims.ownerId, `"${claims.ownerId}" is not the bound owner's id`);
      if (outcome === 'binding_gone') throw refuse(403, claims.repository, 'the binding was removed meanwhile');
      return { token: secret, expiresAt: expiresAt.toISOString(), productId: binding.product_id };
    },

    /**
     * The publisher behind `token` if it is a current credential of this product, else null.
     * Every live credential of the product is compared in constant time (a product has a few).
     */
    async verify(productId: string, token: string): Promise<Publisher | null> {
      if (!hasValidChecksum(token, TRUSTED_CREDENTIAL_PREFIX)) return null;
      const hash = sha256(token);
      let found: string | null = null;
      for (const row of await repo.liveCredentials(productId, now().toISOString())) {
        if (constantTimeEqual(row.token_hash, hash)) found = row.publisher;
      }
      return found === null ? null : (JSON.parse(found) as Publisher);
    },

    /** Adds what a trusted publisher did to the product's history. */
    async record(
      productId: string,
      publisher: Publisher,
      action: 'patch' | 'sftp' | 'release',
      clientAddress: string,
      detail: Record<string, unknown> | null = null,
    ): Promise<void> {
      await repo.record(historyRow(productId, publisher, action, clientAddress, now(), detail));
    },

    /**
     * For the release service: records that `publisher` (the route's `req.publisher`) released
     * `label` as release number `release`.
     */
    async recordRelease(productId: string, publisher: Publisher, release: { label: string; release: number }, clientAddress = ''): Promise<void> {
      await service.record(productId, publisher, 'release', clientAddress, { label: release.label, release: release.release });
    },

    /** The latest trusted publishes of a product, newest first. */
    async history(productId: string, limit = 20): Promise<TrustedPublish[]> {
      return (await repo.history(productId, limit)).map((r) => ({
        at: r.created_at,
        action: r.action,
        provider: r.provider,
        repository: r.repository,
        workflow: r.workflow,
        ref: r.ref,
        runId: r.run_id,
        runUrl: r.run_url,
        bindingId: r.binding_id,
        credentialId: r.credential_id,
        clientAddress: r.client_address,
        detail: r.detail === null ? null : (JSON.parse(r.detail) as Record<string, unknown>),
      }));
    },
  };
  return service;
}

function historyRow(
  productId: string,
  publisher: Publisher,
  action: PublishRow['action'],
  clientAddress: string,
  at: Date,
  detail: Record<string, unknown> | null,
): PublishRow {
  return {
    id: sortableId(at),
    product_id: productId,
    binding_id: publisher.bindingId,
    credential_id: publisher.credentialId,
    action,
    provider: publisher.provider,
    repository: publisher.repository.slice(0, 512),
    workflow: publisher.workflow.slice(0, 512),
    ref: publisher.ref.slice(0, 512),
    run_id: publisher.runId.slice(0, 64),
    run_url: publisher.runUrl?.slice(0, 1024) ?? null,
    detail: detail === null ? null : JSON.stringify(detail),
    client_address: clientAddress.slice(0, 64),
    created_at: at.toISOString(),
  };
}

export type TrustService = ReturnType<typeof trustService>;
