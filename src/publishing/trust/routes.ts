import type { FastifyRequest } from 'fastify';
import { TooManyRequestsError } from '../../infra/errors.js';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { HttpApp } from '../../infra/http.js';
import { problem, problems, PUBLIC_SECURITY } from '../openapi.js';
import { ExchangeAnswer, ExchangeBody } from './schemas.js';
import { TrustRefusedError, type TrustService } from './service.js';

export interface TrustRoutesOptions {
  trust: TrustService;
  /** Refused exchanges per client address (the same brake as bad edit tokens). */
  limiter: FailureLimiter;
}

/** `POST /api/oidc/token`: trusted publishing's exchange of a CI ID token for a product credential. */
export function registerTrustRoutes(app: HttpApp, { trust, limiter }: TrustRoutesOptions): void {
  const brake = async (req: FastifyRequest) => {
    const wait = limiter.retryAfter(req.ip);
    if (wait > 0) throw new TooManyRequestsError(`too many refused attempts from ${req.ip}; retry in ${wait} s`, wait);
  };

  app.post(
    '/api/oidc/token',
    {
      schema: {
        tags: ['trusted publishing'],
        summary: 'Exchange a CI OIDC ID token for a 15-minute product credential',
        description:
          'The ID token of a GitHub Actions or GitLab CI job (audience: this service, see `GET /api/publishing`) is ' +
          'verified with its issuer\'s published keys and matched against the CI identities staff bound to products ' +
          '(`pier staff trust add`). The answer\'s `pier_tp_…` credential works as the product\'s edit token and SFTP ' +
          'password until `expiresAt`. Each ID token can be exchanged once. Every refusal names the claim in `errors[].field`.',
        operationId: 'exchangeOidcToken',
        security: PUBLIC_SECURITY,
        body: ExchangeBody,
        response: {
          200: ExchangeAnswer,
          ...problems(400, 413, 415, 429),
          401: problem(401, 'The ID token is not valid (problem+json `invalid_id_token`; `errors[].field` names the claim: exp, aud, iss, alg, kid, signature, jti, …)'),
          403: problem(403, 'The ID token is valid, but no binding accepts it (problem+json `not_trusted`; `errors[].field` names each claim that did not match)'),
          409: problem(409, 'The ID token matches the bindings of several products: name one in `product` (problem+json `product_ambiguous`)'),
          503: problem(503, "The CI issuer's keys cannot be read now; see `Retry-After`"),
        },
      },
      onRequest: brake,
    },
    async (req, reply) => {
      try {
        const answer = await trust.exchange(req.body.token, { product: req.body.product, clientAddress: req.ip });
        // A credential: never stored by a cache on the way (RFC 6749 §5.1 asks the same of tokens).
        reply.header('cache-control', 'no-store');
        return answer;
      } catch (e) {
        if (e instanceof TrustRefusedError) limiter.fail(req.ip);
        throw e;
      }
    },
  );
}
