import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Callers } from '../infra/pace-hooks.js';

/**
 * Who a request to the web part is, for pacing (infra/pace-hooks.ts): the bearer token it
 * carries (a product's edit token, a CI job's OIDC token), whatever the route, or else the
 * address it comes from. Paced before a route authenticates it, so a wrong token is a caller
 * of its own too (its 401s are counted per address by the failure limiter). Only a digest of
 * the token is kept. Pages answered from memory on the fast path never reach this.
 */
export const publishingCallers: Callers = {
  of(req: FastifyRequest): string {
    const auth = req.headers.authorization;
    if (typeof auth === 'string' && auth.length > 7 && /^bearer /i.test(auth)) {
      return `token:${createHash('sha256').update(auth.slice(7).trim()).digest('base64url').slice(0, 22)}`;
    }
    return `address:${req.ip}`;
  },
  unpaced: () => false,
};
