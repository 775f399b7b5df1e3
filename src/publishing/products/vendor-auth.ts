import type { FastifyRequest } from 'fastify';
import { TooManyRequestsError, UnauthorizedError } from '../../infra/errors.js';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { ProductRow } from './repository.js';
import type { ProductService } from './service.js';
import type { Publisher } from './publisher.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The product of `/api/products/:id…` routes, set by their authentication. */
    product?: ProductRow;
    /** Set when the vendor authenticated with a trusted-publishing credential: the CI run behind it. */
    publisher?: Publisher;
  }
}

/**
 * Whether the request presents a credential at all. A request without one (a browser, a
 * crawler, a script that forgot its token) guesses nothing, so it is answered 401 but not
 * counted: counting it would let anonymous requests ban an address that many clients share
 * (a NAT, a CI egress, a proxy), and with it the vendor behind that address.
 */
function presentsCredential(authorization: string | undefined): boolean {
  return /\S/.test((authorization ?? '').replace(/^\s*Bearer(?=\s|$)/i, ''));
}

/**
 * The `onRequest` hook of a vendor route under `/api/products/:id…`: the edit token or a
 * `pier_tp_…` credential of that product, failures of presented credentials counted per client
 * address. Sets `req.product`, and `req.publisher` for a trusted credential.
 */
export function vendorAuthentication(products: Pick<ProductService, 'authenticateVendor'>, limiter: FailureLimiter) {
  return async (req: FastifyRequest): Promise<void> => {
    const wait = limiter.retryAfter(req.ip);
    if (wait > 0) throw new TooManyRequestsError(`too many failed attempts from ${req.ip}; retry in ${wait} s`, wait);
    const { id } = req.params as { id: string };
    try {
      const who = await products.authenticateVendor(id, req.headers.authorization);
      req.product = who.product;
      if (who.publisher) req.publisher = who.publisher;
    } catch (e) {
      if (e instanceof UnauthorizedError && presentsCredential(req.headers.authorization)) limiter.fail(req.ip);
      throw e;
    }
  };
}
