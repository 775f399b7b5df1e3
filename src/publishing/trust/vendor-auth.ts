import type { FastifyRequest } from 'fastify';
import { TooManyRequestsError, UnauthorizedError } from '../../infra/errors.js';
import type { FailureLimiter } from '../../infra/failure-limiter.js';
import type { ProductRow } from '../products/repository.js';
import type { ProductService } from '../products/service.js';
import type { Publisher } from './claims.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The product of `/api/products/:id…` routes, set by their authentication. */
    product?: ProductRow;
    /** Set when the vendor authenticated with a trusted-publishing credential: the CI run behind it. */
    publisher?: Publisher;
  }
}

/**
 * The `onRequest` hook of a vendor route under `/api/products/:id…`: the edit token or a
 * `pier_tp_…` credential of that product, failures counted per client address. Sets
 * `req.product`, and `req.publisher` for a trusted credential.
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
      if (e instanceof UnauthorizedError) limiter.fail(req.ip);
      throw e;
    }
  };
}
