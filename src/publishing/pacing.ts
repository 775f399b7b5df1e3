import type { FastifyRequest } from 'fastify';
import type { Callers } from '../infra/pace-hooks.js';

/**
 * Who a request to the web part is, for pacing (infra/pace-hooks.ts): the address it comes from
 * (behind `PIER_TRUST_PROXY`, the one the proxy forwards for). Pacing runs before any route has
 * checked a token, so a token cannot name a caller: each made-up token would get a bucket of
 * its own. Pages answered from memory on the fast path never reach this.
 */
export const publishingCallers: Callers = {
  of: (req: FastifyRequest) => `address:${req.ip}`,
  unpaced: () => false,
};
